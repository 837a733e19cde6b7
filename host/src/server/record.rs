//! The usage record of one `/v1/*` request, filled in as the request travels and handed to the
//! ledger exactly once when it is over (for a stream: when it ends or the client goes away).

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::error::ApiError;
use super::request::ClientRequest;
use crate::catalog::ModelInfo;
use crate::gateway::Target;
use crate::ledger::{Ledger, UsageRecord};
use crate::plugins::{Operation, Usage};
use crate::redact::Redactor;
use crate::telemetry::{RequestEnd, RequestTelemetry};
use crate::tokenizer::Tokenizer;

/// What is known of a request's end before its hook runs: the target that answered and the
/// status sent. Shared between the proxy (which fills it) and the hook (which reads it).
#[derive(Default)]
struct Outcome {
    provider: Option<String>,
    model: Option<String>,
    price: Option<Arc<ModelInfo>>,
    status: u16,
    error_type: Option<String>,
    /// `gen_ai.provider.name` of the target that answered.
    system: Option<Cow<'static, str>>,
    /// The error's message for the client, and its internal detail, for the log line.
    error: Option<(String, Option<String>)>,
}

/// What the proxy and the hook share.
struct Shared {
    outcome: Mutex<Outcome>,
    /// Output tokens a stream counted itself because the upstream reported no usage.
    seen_output: Arc<AtomicU64>,
    started: Instant,
    /// When the first output went to the client, in µs after `started` (0: not yet).
    first_output_us: AtomicU64,
    /// The secrets this request must not leak: kept out of its errors, log line and record.
    redactor: Redactor,
}

/// A request's record in the making.
pub struct Recorder {
    ledger: Ledger,
    record: UsageRecord,
    started: Instant,
    /// Input tokens counted by the gateway, for a stream whose upstream reports no usage.
    estimated_input: Option<u64>,
    shared: Arc<Shared>,
    /// The request's span, metrics and log line, finished with the record (taken then).
    telemetry: Option<RequestTelemetry>,
    /// Queued already: by `finish`, or by `drop` for a request cut before its end.
    written: bool,
}

/// The proxy's handle on the outcome, kept while the hook travels with the response.
#[derive(Clone)]
pub struct OutcomeCell(Arc<Shared>);

impl Recorder {
    pub fn new(
        ledger: &Ledger,
        request_id: String,
        project: String,
        api_key_id: Option<String>,
        operation: Operation,
        telemetry: RequestTelemetry,
        redactor: Redactor,
    ) -> Self {
        Self {
            ledger: ledger.clone(),
            record: UsageRecord {
                request_id,
                time_us: crate::ledger::time::now_us(),
                project,
                api_key_id,
                operation: operation_name(operation).to_owned(),
                ..UsageRecord::default()
            },
            started: Instant::now(),
            estimated_input: None,
            shared: Arc::new(Shared {
                outcome: Mutex::default(),
                seen_output: Arc::default(),
                started: Instant::now(),
                first_output_us: AtomicU64::new(0),
                redactor,
            }),
            telemetry: Some(telemetry),
            written: false,
        }
    }

    pub fn outcome(&self) -> OutcomeCell {
        OutcomeCell(Arc::clone(&self.shared))
    }

    /// Takes the user from the parsed request; for a stream, counts its input tokens in case the
    /// upstream never reports usage (the client may leave before the last chunk).
    pub fn request(&mut self, request: &ClientRequest) {
        self.record.user_id.clone_from(&request.user.id);
        self.record.user_name.clone_from(&request.user.name);
        self.record.user_tags.clone_from(&request.user.tags);
        if request.stream {
            self.estimated_input = Some(u64::from(request.estimate_input_tokens(Tokenizer)));
        }
        if let Some(telemetry) = &mut self.telemetry {
            let redactor = &self.shared.redactor;
            telemetry.request(
                &redactor.text(&request.model),
                request.max_output_tokens(),
                || redactor.string(request.prompt_json()),
            );
        }
    }

    /// Records a request that failed before any hook existed (bad body, refused by a limit).
    pub fn failed(self, error: &ApiError) {
        self.outcome().error(error);
        self.finish(None, None, false);
    }

    /// Builds the record and queues it. `usage` and `cost` are the upstream's; without usage, a
    /// stream's tokens are the gateway's own count (the prompt, and the text it relayed), marked
    /// as estimated.
    pub fn finish(mut self, usage: Option<Usage>, cost: Option<i64>, succeeded: bool) {
        self.write(usage, cost, succeeded);
    }

    fn write(&mut self, usage: Option<Usage>, cost: Option<i64>, succeeded: bool) {
        if std::mem::replace(&mut self.written, true) {
            return;
        }
        let outcome = match self.shared.outcome.lock() {
            Ok(mut outcome) => std::mem::take(&mut *outcome),
            Err(_) => Outcome::default(),
        };
        let record = &mut self.record;
        record.latency_us = i64::try_from(self.started.elapsed().as_micros()).unwrap_or(i64::MAX);
        let first_output_us = self.shared.first_output_us.load(Ordering::Relaxed);
        record.ttft_us =
            (first_output_us > 0).then(|| i64::try_from(first_output_us).unwrap_or(i64::MAX));
        record.provider = outcome.provider;
        record.model = outcome.model;
        record.status = outcome.status;
        record.error_type = outcome.error_type;
        match usage {
            Some(usage) => {
                record.input_tokens = usage.input_tokens;
                record.output_tokens = usage.output_tokens;
                record.cached_input_tokens = usage.cached_input_tokens;
                record.reasoning_tokens = usage.reasoning_tokens;
                record.cost_micros = cost;
            }
            None if record.status < 400 && record.model.is_some() => {
                if let Some(input) = self.estimated_input {
                    let output = self.shared.seen_output.load(Ordering::Relaxed);
                    record.input_tokens = input;
                    record.output_tokens = output;
                    record.estimated = true;
                    record.cost_micros = outcome.price.map(|info| {
                        super::proxy::usage_cost(
                            &info,
                            Usage {
                                input_tokens: input,
                                output_tokens: output,
                                cached_input_tokens: 0,
                                cache_write_tokens: 0,
                                reasoning_tokens: 0,
                                images: 0,
                            },
                        )
                    });
                }
            }
            None => {}
        }
        if !succeeded && record.status < 400 && record.error_type.is_none() {
            // A stream that failed midway or whose client went away.
            record.error_type = Some("stream_incomplete".to_owned());
        }
        // What the log line, the span and the ledger get: no secret of the config or the request.
        let redactor = &self.shared.redactor;
        redactor.record(record);
        let error = outcome.error.map(|(message, detail)| {
            let detail = detail.map(|d| redactor.string(d));
            (redactor.string(message), detail)
        });
        if let Some(telemetry) = self.telemetry.take() {
            let error = error.as_ref();
            telemetry.finish(&RequestEnd {
                record,
                system: outcome.system.as_deref(),
                error: error.map(|(message, detail)| (message.as_str(), detail.as_deref())),
            });
        }
        self.ledger.record(std::mem::take(record));
    }
}

impl OutcomeCell {
    fn with(&self, f: impl FnOnce(&mut Outcome)) {
        if let Ok(mut outcome) = self.0.outcome.lock() {
            f(&mut outcome);
        }
    }

    /// The secrets this request must not leak.
    pub fn redactor(&self) -> &Redactor {
        &self.0.redactor
    }

    /// Where a stream puts the output tokens it counted when the upstream reports no usage.
    pub fn seen_output(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.0.seen_output)
    }

    /// The first output is on its way to the client (time to first token); later calls are
    /// ignored.
    pub fn first_output(&self) {
        let us = u64::try_from(self.0.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let _ = self.0.first_output_us.compare_exchange(
            0,
            us.max(1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// The target being tried; the last one is the one that answered.
    pub fn target(&self, target: &Target<'_>) {
        self.with(|o| {
            o.provider = Some(target.provider.name.to_string());
            o.model = Some(target.model.to_owned());
            o.price = target.provider.price(target.model);
            o.system = Some(crate::telemetry::gen_ai_system(
                target.provider.plugin.name(),
            ));
        });
    }

    pub fn status(&self, status: u16) {
        self.with(|o| o.status = status);
    }

    pub fn error(&self, error: &ApiError) {
        let status = error.status().as_u16();
        let detail = error.detail();
        // A provider's error code comes from its upstream: bounded before it is stored.
        let kind =
            crate::clip::clip(detail.code.unwrap_or(detail.kind), ERROR_TYPE_MAX).into_owned();
        let message = detail.message;
        let internal = error.internal_detail();
        self.with(|o| {
            o.status = status;
            o.error_type = Some(kind);
            o.error = Some((message, internal));
        });
    }
}

/// A request dropped before its end was known (its client went away while it waited for the
/// upstream, or a shutdown deadline cut it) is recorded too: with 499, as nginx logs a request
/// its client closed, and what the target reported so far.
impl Drop for Recorder {
    fn drop(&mut self) {
        if self.written {
            return;
        }
        if let Ok(mut outcome) = self.shared.outcome.lock()
            && outcome.status == 0
        {
            outcome.status = 499;
            outcome.error_type = Some("request_cancelled".to_owned());
        }
        self.write(None, None, false);
    }
}

/// Bytes of a record's error code, at most.
const ERROR_TYPE_MAX: usize = 64;

fn operation_name(operation: Operation) -> &'static str {
    match operation {
        Operation::ChatCompletions => "chat.completions",
        Operation::Embeddings => "embeddings",
        Operation::ImageGenerations => "images.generations",
        Operation::ListModels => "models",
        Operation::Messages => "messages",
        Operation::Responses => "responses",
    }
}
