//! The attempt stage: one try at one target, in a span of its own. The provider plugin builds
//! the upstream request (or answers itself), the request goes upstream under the entry's base
//! URL, and the plugin reads the answer back: whole, or as a stream the relay passes on. An
//! operation the plugin declared [`plain`](super::plain) is sent and read by the host alone,
//! the plugin started only for an answer the host cannot read (an error status).

use std::sync::Arc;

use super::context::Context;
use super::forward::socket::{self, Went};
use super::plain::stream::{Decoder, PlainStream};
use super::relay::{Upstream, http_bytes};
use crate::error::ApiError;
use crate::gateway::Target;
use crate::plugins::{
    Completion, HttpResponse, Operation, PluginCall, Prepared, RequestInfo, SlotKind, Usage,
};
use crate::redact::Redactor;
use crate::state::AppState;
use crate::telemetry;
use crate::upstream;

/// What an attempt sent back.
pub enum Sent {
    /// A whole answer (the body is JSON), with the usage the plugin read from it; `native`
    /// when it is already in the client's dialect (not a canonical chat completion).
    Whole {
        body: String,
        usage: Option<Usage>,
        native: bool,
    },
    /// A stream the plugin produced at once: its canonical chunks.
    Events {
        events: Vec<String>,
        usage: Option<Usage>,
    },
    /// An upstream stream, for the relay to pass on.
    Stream(Box<Upstream>),
    /// A successful answer in bytes (audio), passed through as it arrives.
    Raw(Box<super::raw_answer::Raw>),
}

/// Characters of a client's model name an error message repeats.
const MODEL_SHOWN: usize = 64;

/// One attempt at `target`. The context records the target as the one tried last.
pub async fn attempt(
    state: &AppState,
    cx: &mut Context,
    target: &Target<'_>,
) -> Result<Sent, ApiError> {
    let provider = target.provider;
    // A model list is asked of plugins elsewhere (`server/models.rs`), never attempted here.
    let operation = crate::plugins::operation_names(cx.request.operation).measured;
    let mut span = cx.trace.attempt(
        operation,
        &provider.name,
        &provider.system,
        &cx.redactor.text(target.model),
    );
    cx.trying(target);
    let scope = span.span().scope_handle();
    let result = scope.run(send(state, cx, target, &mut span)).await;
    if let Err(error) = &result {
        span.failed(
            cx.trace.metrics(),
            &error.error_type(),
            &error.detail().message,
            error.is_target_failure(),
        );
    }
    result
}

async fn send(
    state: &AppState,
    cx: &mut Context,
    target: &Target<'_>,
    span: &mut telemetry::Attempt,
) -> Result<Sent, ApiError> {
    let request = &mut cx.request;
    let provider = target.provider;
    // A target that speaks the client's dialect gets the client's own body (with a guard's
    // rewrite made in it), unless the guards need the request translated.
    let native = cx
        .translation
        .as_ref()
        .filter(|t| provider.native.contains(&t.dialect.name) && !cx.guard.forces_translation());
    let mut canonical = match native {
        Some(translation) => translation.native_request(cx.operation, target.model, request.stream),
        None => request.canonical(target.model),
    };
    let native = native.is_some();
    let info = RequestInfo {
        native: canonical.native.clone(),
        operation: canonical.operation,
        model: canonical.model.clone(),
        stream: canonical.stream,
    };
    // A stream request's instance may become its decoder and live as long as the stream.
    let kind = if request.stream {
        SlotKind::Stream
    } else {
        SlotKind::Call
    };
    let redactor = &cx.redactor;
    // A plain request needs no instance: the host sends what `prepare` would (issue 38).
    let plain = match native {
        true => None,
        false => (provider.plain).request(canonical.operation, &mut canonical.body, request.stream),
    };
    let (call, prepared) = match plain {
        Some(http) => (None, Prepared::Upstream(http)),
        None => {
            let mut call = provider
                .plugin
                .start(kind)
                .await
                .map_err(ApiError::plugin)?;
            let prepared = call
                .prepare(&provider.config, &canonical)
                .await
                .map_err(|failure| ApiError::prepare_failed(failure, canonical.body.len()))?
                .map_err(|error| ApiError::provider(&provider.name, error, redactor))?;
            (Some(call), prepared)
        }
    };

    let local = matches!(prepared, Prepared::Local(_) | Prepared::LocalStream(_));
    if local && native && cx.guard.answer_guarded() {
        // No upstream answer for the provider to read into a canonical view: fail closed
        // rather than pass it unchecked.
        return Err(super::guard::failure::failed_with(
            "answer",
            "a native answer the provider made itself cannot be checked",
        ));
    }
    Ok(match prepared {
        Prepared::Local(completion) => {
            span.completion(&completion.body, completion.usage);
            Sent::Whole {
                body: completion.body,
                usage: completion.usage,
                native,
            }
        }
        Prepared::LocalStream(output) => Sent::Events {
            events: output.events,
            usage: output.usage,
        },
        Prepared::UpstreamForm(form) => {
            let mut call = plugin_call(call, target, kind).await?;
            let admitted = admit(target, span, form.request)?;
            let Some(upload) = request.upload.as_ref() else {
                return Err(ApiError::BadUpstreamRequest {
                    provider: provider.name.to_string(),
                    detail: "the plugin sent a form for a request without a file".to_owned(),
                });
            };
            let response = upstream::send_form(
                &state.http,
                admitted,
                form.fields,
                form.file_field,
                upload,
                provider.timeout,
            )
            .await
            .map_err(|e| ApiError::upstream(&provider.name, e))?;
            span.status(response.status().as_u16());
            if request.stream && response.status().is_success() {
                // A streamed transcription: `transcript.text.*` events, relayed as a stream.
                let headers = header_pairs(response.headers());
                let decoder = call
                    .open_stream(&provider.config, &info, &headers)
                    .await
                    .map_err(ApiError::plugin)?;
                return Ok(Sent::Stream(Box::new(Upstream {
                    decoder: Decoder::Plugin(decoder),
                    provider: Arc::clone(&provider.name),
                    shadow: None,
                    bytes: http_bytes(response),
                    idle_timeout: provider.timeout,
                    native,
                })));
            }
            let completion = complete(&mut call, target, &info, response, redactor).await?;
            span.completion(&completion.body, completion.usage);
            Sent::Whole {
                body: completion.body,
                usage: completion.usage,
                native,
            }
        }
        Prepared::UpstreamRaw(raw) => {
            let mut call = plugin_call(call, target, kind).await?;
            let admitted = admit(target, span, raw.request)?;
            let response = upstream::send(&state.http, admitted, provider.timeout)
                .await
                .map_err(|e| ApiError::upstream(&provider.name, e))?;
            span.status(response.status().as_u16());
            if !response.status().is_success() {
                // An error is the plugin's to read, as any other answer's.
                complete(&mut call, target, &info, response, redactor).await?;
                return Err(ApiError::BadUpstreamRequest {
                    provider: provider.name.to_string(),
                    detail: "the plugin read an upstream error as a success".to_owned(),
                });
            }
            Sent::Raw(Box::new(super::raw_answer::Raw {
                provider: provider.name.to_string(),
                response,
                usage: raw.usage,
                idle_timeout: provider.timeout,
            }))
        }
        Prepared::Upstream(http) => {
            let admitted = admit(target, span, http)?;
            // A native answer the guards check: the provider reads it into a canonical view
            // too, which is what they see.
            let view = (native && cx.guard.answer_guarded()).then(|| RequestInfo {
                native: None,
                operation: Operation::ChatCompletions,
                ..info.clone()
            });
            // A client socket's turn may go on the entry's upstream socket instead.
            let turn = cx.socket.as_ref();
            let went = socket::send(turn, provider, &info, &admitted, redactor).await?;
            let (headers, bytes) = match went {
                Went::Events(bytes) => (socket::event_headers(), bytes),
                Went::Refused(response) => {
                    // An error is the plugin's to read, as over HTTP.
                    span.status(response.status);
                    let mut call = plugin_call(call, target, kind).await?;
                    parsed(&mut call, target, &info, &response, redactor).await?;
                    return Err(ApiError::BadUpstreamRequest {
                        provider: provider.name.to_string(),
                        detail: "the plugin read an upstream error as a success".to_owned(),
                    });
                }
                Went::Http => {
                    let response = upstream::send(&state.http, admitted, provider.timeout)
                        .await
                        .map_err(|e| ApiError::upstream(&provider.name, e))?;
                    span.status(response.status().as_u16());
                    if !request.stream || !response.status().is_success() {
                        return whole(
                            cx,
                            target,
                            span,
                            (call, kind),
                            view,
                            &info,
                            response,
                            native,
                        )
                        .await;
                    }
                    (header_pairs(response.headers()), http_bytes(response))
                }
            };
            let shadow = match &view {
                Some(view) => Some(
                    (provider.plugin.start(SlotKind::Stream).await)
                        .map_err(ApiError::plugin)?
                        .open_stream(&provider.config, view, &headers)
                        .await
                        .map_err(ApiError::plugin)?,
                ),
                None => None,
            };
            // The entry's place in the request's snapshot, where a plain stream's decoder
            // finds the plugin should it meet what it cannot read.
            let index = cx
                .gateway
                .providers
                .iter()
                .position(|p| std::ptr::eq(p, provider));
            let decoder = match (call, index) {
                // The host reads a plain stream; the plugin only what it cannot read.
                (None, Some(index)) => Decoder::Plain(PlainStream::new(
                    Arc::clone(&cx.gateway),
                    index,
                    info,
                    headers,
                )),
                (call, _) => Decoder::Plugin(
                    plugin_call(call, target, kind)
                        .await?
                        .open_stream(&provider.config, &info, &headers)
                        .await
                        .map_err(ApiError::plugin)?,
                ),
            };
            Sent::Stream(Box::new(Upstream {
                provider: Arc::clone(&provider.name),
                decoder,
                shadow,
                bytes,
                idle_timeout: provider.timeout,
                native,
            }))
        }
    })
}

/// A whole upstream answer (not a stream, or an error): read by the host for a plain request,
/// else by the plugin; a native one the answer guards check (`view`) through their canonical
/// view of it.
#[expect(
    clippy::too_many_arguments,
    reason = "the attempt's parts, passed on once"
)]
async fn whole(
    cx: &mut Context,
    target: &Target<'_>,
    span: &mut telemetry::Attempt,
    (call, kind): (Option<PluginCall>, SlotKind),
    view: Option<RequestInfo>,
    info: &RequestInfo,
    response: reqwest::Response,
    native: bool,
) -> Result<Sent, ApiError> {
    let redactor = &cx.redactor.clone();
    let response = read(target, response).await?;
    let mut call = match (call, &view) {
        (None, None) => {
            let completion = plain_answer(target, info, response, redactor).await?;
            span.completion(&completion.body, completion.usage);
            cx.spent = completion.usage;
            return Ok(Sent::Whole {
                body: completion.body,
                usage: completion.usage,
                native,
            });
        }
        (call, _) => plugin_call(call, target, kind).await?,
    };
    let completion = parsed(&mut call, target, info, &response, redactor).await?;
    span.completion(&completion.body, completion.usage);
    cx.spent = completion.usage;
    let body = match view {
        Some(view) => {
            let seen = parsed(&mut call, target, &view, &response, redactor).await?;
            // Boxed: the guards' future would size every whole request's.
            let guarded = Box::pin(super::guard::native::whole(cx, completion.body, &seen.body));
            guarded.await?
        }
        None => completion.body,
    };
    Ok(Sent::Whole {
        body,
        usage: completion.usage,
        native,
    })
}

/// The request's instance: the one `prepare` ran in, else one started now.
async fn plugin_call(
    call: Option<PluginCall>,
    target: &Target<'_>,
    kind: SlotKind,
) -> Result<PluginCall, ApiError> {
    match call {
        Some(call) => Ok(call),
        None => (target.provider.plugin.start(kind).await).map_err(ApiError::plugin),
    }
}

/// A plain request's whole answer: read by the host when it is a success it can read, else by
/// the plugin, started now, so that an error is mapped as the plugin maps it.
async fn plain_answer(
    target: &Target<'_>,
    info: &RequestInfo,
    response: HttpResponse,
    redactor: &Redactor,
) -> Result<Completion, ApiError> {
    let response = match (200..300).contains(&response.status) {
        true => match super::plain::completion(response) {
            Ok(completion) => return Ok(completion),
            Err(unread) => unread,
        },
        false => response,
    };
    let mut call = plugin_call(None, target, SlotKind::Call).await?;
    parsed(&mut call, target, info, &response, redactor).await
}

/// Stamps the attempt's trace on `http` and checks its URL against the entry's base URL.
fn admit(
    target: &Target<'_>,
    span: &telemetry::Attempt,
    mut http: crate::plugins::HttpRequest,
) -> Result<upstream::Admitted, ApiError> {
    let provider = target.provider;
    if let Some(traceparent) = span.traceparent() {
        http.headers
            .retain(|(name, _)| !name.eq_ignore_ascii_case("traceparent"));
        http.headers.push(("traceparent".to_owned(), traceparent));
    }
    provider
        .scope
        .admit(http)
        .map_err(|reason| ApiError::UnsafeUpstreamUrl {
            provider: provider.name.to_string(),
            model: upstream::shorten(target.model, MODEL_SHOWN),
            reason,
        })
}

/// Reads a whole upstream response and has the plugin translate it.
async fn complete(
    call: &mut PluginCall,
    target: &Target<'_>,
    info: &RequestInfo,
    upstream: reqwest::Response,
    redactor: &Redactor,
) -> Result<Completion, ApiError> {
    let response = read(target, upstream).await?;
    parsed(call, target, info, &response, redactor).await
}

/// A whole upstream response, read.
async fn read(target: &Target<'_>, upstream: reqwest::Response) -> Result<HttpResponse, ApiError> {
    let provider = target.provider;
    let status = upstream.status().as_u16();
    let headers = header_pairs(upstream.headers());
    let body = upstream::read_body(upstream, provider.timeout)
        .await
        .map_err(|e| ApiError::upstream(&provider.name, e))?;
    Ok(HttpResponse {
        status,
        headers,
        body: body.to_vec(),
    })
}

/// The plugin's reading of a whole upstream response, for the request `info` describes.
async fn parsed(
    call: &mut PluginCall,
    target: &Target<'_>,
    info: &RequestInfo,
    response: &HttpResponse,
    redactor: &Redactor,
) -> Result<Completion, ApiError> {
    let provider = target.provider;
    call.parse_response(&provider.config, info, response)
        .await
        .map_err(ApiError::plugin)?
        .map_err(|error| ApiError::provider(&provider.name, error, redactor))
}

/// Headers as plugins receive them: lower-case names (as `http` keeps them), UTF-8 values.
pub(super) fn header_pairs(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}
