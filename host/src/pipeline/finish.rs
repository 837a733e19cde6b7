//! Where every request ends, whatever the way: the limits are settled, the usage record is
//! written to the ledger, and the telemetry (metrics, span end, the log line) is recorded from
//! that record. [`Context::finish`] is called once with how it ended; a context dropped before
//! (its client went away while it waited for the upstream, a stream cut mid-way, a shutdown
//! deadline) ends here too, through `Drop`.
//!
//! The record goes to the ledger's journal; [`Context::finish`] hands back what the answer's
//! last byte must wait for ([`Written`]), so that no client sees an answer whose record a crash
//! could lose. A context dropped has no byte left to send: nothing waits for its record.

use super::context::Context;
use crate::catalog::{self, ModelInfo};
use crate::error::ApiError;
use crate::ledger::{UsageRecord, Written};
use crate::plugins::{Settlement, Usage};
use crate::telemetry::RequestEnd;
use crate::tokenizer::Tokenizer;

/// How a request ended.
pub enum End<'a> {
    /// The client got this error: refused at auth, a bad request, a limit's denial, no route,
    /// an upstream's or a plugin's failure.
    Failed(&'a ApiError),
    /// A whole answer (or a stream the plugin produced at once) was sent, with the usage the
    /// plugin reported.
    Answered(Option<Usage>),
    /// A relayed stream ended: `completed` when its upstream finished, not when it broke or
    /// its client left. `text` is what was relayed, counted when the upstream reported no
    /// usage.
    Streamed {
        usage: Option<Usage>,
        text: String,
        completed: bool,
    },
    /// Answered from the response cache: nothing was spent; `usage` is what the kept answer
    /// cost when it was made (the saving).
    Cached(Option<Usage>),
    /// A pass-through answer was relayed with the upstream's `status`: `completed` when its
    /// body ended, with the usage its plugin read from it.
    Passed {
        status: u16,
        usage: Option<Usage>,
        completed: bool,
    },
    /// An answer whose cost its own meter priced (a Realtime response, whose text and audio
    /// tokens have prices apart): `completed` when it finished as asked.
    Priced {
        usage: Usage,
        cost_micros: Option<i64>,
        completed: bool,
    },
    /// Dropped before its end was known.
    Cancelled,
}

impl Context {
    /// Ends the request: settles its limits, then writes its record and telemetry. The answer's
    /// last byte waits on what it returns.
    pub fn finish(mut self, end: End<'_>) -> Written {
        self.end(end)
    }

    /// Ends the request as failed with `error`, for a way out that returns the error beside
    /// what its answer waits on.
    pub fn fail<T>(self, error: ApiError) -> (Result<T, ApiError>, Written) {
        let written = self.finish(End::Failed(&error));
        (Err(error), written)
    }

    fn end(&mut self, end: End<'_>) -> Written {
        // Taken once: whatever runs `end` a second time (the drop after `finish`) finds it gone.
        let Some(telemetry) = self.telemetry.take() else {
            return Written::now();
        };
        let (usage, succeeded) = match &end {
            End::Answered(usage) => (*usage, true),
            End::Streamed {
                usage, completed, ..
            } => (*usage, *completed),
            // Refused after its answer was paid for (see `Context::spent`).
            End::Failed(_) => (self.spent.take(), false),
            End::Cancelled => (None, false),
            // A hit spends nothing: it counts as a request, its tokens and cost as none.
            End::Cached(_) => (None, true),
            End::Passed {
                status,
                usage,
                completed,
            } => (*usage, *completed && *status < 400),
            End::Priced {
                usage, completed, ..
            } => (Some(*usage), *completed),
        };
        let price = self.target.as_ref().and_then(|t| t.price.clone());
        let cost = match &end {
            End::Cached(_) => Some(0),
            End::Priced { cost_micros, .. } => *cost_micros,
            _ => usage
                .zip(price.as_deref())
                .map(|(u, info)| usage_cost(info, u)),
        };
        if let Some(admission) = self.admission.take()
            && tokio::runtime::Handle::try_current().is_ok()
        {
            let settlement = Settlement {
                input_tokens: usage.map_or(0, |u| u.input_tokens),
                output_tokens: usage.map_or(0, |u| u.output_tokens),
                cost_micros: cost,
                succeeded,
            };
            self.background.spawn(admission.settle(settlement));
        }

        let target = self.target.take();
        let mut record = UsageRecord {
            session_id: self.session_id.take(),
            request_id: std::mem::take(&mut self.request_id),
            time_us: self.arrived_us,
            project: std::mem::take(&mut self.caller.project),
            api_key_id: self.caller.key_id.take(),
            operation: self.recorded_as.take().map_or_else(
                || {
                    crate::plugins::operation_names(self.operation)
                        .recorded
                        .to_owned()
                },
                Into::into,
            ),
            user_id: self.request.user.id.take(),
            user_name: self.request.user.name.take(),
            user_tags: std::mem::take(&mut self.request.user.tags),
            latency_us: i64::try_from(self.started.elapsed().as_micros()).unwrap_or(i64::MAX),
            ttft_us: self
                .first_output_us
                .map(|us| i64::try_from(us).unwrap_or(i64::MAX)),
            ..UsageRecord::default()
        };
        let mut error = None;
        match &end {
            End::Failed(failure) => {
                let detail = failure.detail();
                record.status = failure.status().as_u16();
                // A provider's error code comes from its upstream: bounded before it is stored.
                let code = crate::clip::clip(detail.code.unwrap_or(detail.kind), ERROR_TYPE_MAX);
                record.error_type = Some(code.into_owned());
                error = Some((detail.message, failure.internal_detail()));
            }
            End::Answered(_) | End::Streamed { .. } | End::Priced { .. } => record.status = 200,
            End::Cached(saved) => {
                record.status = 200;
                record.cache_hit = true;
                record.cost_micros = Some(0);
                record.saved_cost_micros = saved
                    .zip(price.as_deref())
                    .map(|(u, info)| usage_cost(info, u));
            }
            End::Passed { status, .. } => {
                record.status = *status;
                if *status >= 400 {
                    record.error_type = Some(format!("http_{status}"));
                }
            }
            End::Cancelled => {
                // As nginx logs a request its client closed.
                record.status = 499;
                record.error_type = Some("request_cancelled".to_owned());
            }
        }
        if let Some(target) = &target {
            record.provider = Some(target.provider.clone());
            // A pass-through answer that named no model.
            record.model = Some(target.model.clone()).filter(|m| !m.is_empty());
        }
        match usage {
            Some(usage) => {
                record.input_tokens = usage.input_tokens;
                record.output_tokens = usage.output_tokens;
                record.cached_input_tokens = usage.cached_input_tokens;
                record.reasoning_tokens = usage.reasoning_tokens;
                record.cache_write_tokens = usage.cache_write_tokens;
                record.audio_ms = usage.audio_ms;
                record.characters = usage.characters;
                record.search_units = usage.search_units;
                record.cost_micros = cost;
            }
            // A stream whose upstream reported no usage (or whose client left before it did):
            // the gateway's own count of the prompt and of the text it relayed, marked so.
            None if record.status < 400
                && target.is_some()
                && self.request.stream
                && !record.cache_hit =>
            {
                let input = u64::from(self.prompt_tokens());
                let output = match &end {
                    End::Streamed { text, .. } => u64::from(Tokenizer.count(text)),
                    End::Failed(_)
                    | End::Answered(_)
                    | End::Cached(_)
                    | End::Passed { .. }
                    | End::Priced { .. }
                    | End::Cancelled => 0,
                };
                record.input_tokens = input;
                record.output_tokens = output;
                record.estimated = true;
                record.cost_micros = price.map(|info| {
                    usage_cost(
                        &info,
                        Usage {
                            input_tokens: input,
                            output_tokens: output,
                            cached_input_tokens: 0,
                            cache_write_tokens: 0,
                            reasoning_tokens: 0,
                            images: 0,
                            search_units: 0,
                            audio_ms: 0,
                            characters: 0,
                        },
                    )
                });
            }
            None => {}
        }
        if !succeeded && record.status < 400 && record.error_type.is_none() {
            // A stream that failed midway or whose client went away.
            record.error_type = Some("stream_incomplete".to_owned());
        }
        record.guards = self.guard.summary(self.trace.metrics());
        // What the log line, the span and the ledger get: no secret of the config or the request.
        let redactor = &self.redactor;
        redactor.record(&mut record);
        let error = error.map(|(message, detail)| {
            (redactor.string(message), detail.map(|d| redactor.string(d)))
        });
        telemetry.finish(&RequestEnd {
            record: &record,
            system: target.as_ref().map(|t| &*t.system),
            error: error
                .as_ref()
                .map(|(message, detail)| (message.as_str(), detail.as_deref())),
        });
        if matches!(end, End::Failed(ApiError::LedgerFull)) {
            // Refused because the journal has no room for records: this one would not fit
            // either. The refusals are counted (`wasmgate_ledger_journal_refusals_total`).
            return Written::now();
        }
        self.ledger.record(record)
    }
}

/// A request dropped before its end was known is recorded too, with 499 and what the target
/// reported so far; its limits are settled as unused.
impl Drop for Context {
    fn drop(&mut self) {
        // Its client has nothing left to receive: nothing waits for the record.
        drop(self.end(End::Cancelled));
    }
}

/// A request's cost in micro-USD at `info`'s prices. Plugins count cache writes inside the
/// input tokens; the catalog prices them apart.
pub fn usage_cost(info: &ModelInfo, usage: Usage) -> i64 {
    let cache_write = usage.cache_write_tokens.min(usage.input_tokens);
    catalog::metered_cost_micros(
        info,
        usage.input_tokens - cache_write,
        usage.output_tokens,
        usage.cached_input_tokens,
        cache_write,
        u64::from(usage.images),
        catalog::Metered {
            search_units: usage.search_units,
            audio_ms: usage.audio_ms,
            characters: usage.characters,
        },
    )
}

/// Bytes of a record's error code, at most.
const ERROR_TYPE_MAX: usize = 64;
