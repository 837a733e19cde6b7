//! The `/v1/*` proxy: request → model resolution → provider plugin → upstream → response.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};

use super::auth;
use super::body;
use super::error::ApiError;
use super::request::ClientRequest;
use super::stream;
use std::time::Instant;

use super::record::{OutcomeCell, Recorder};
use super::request_log::{LoggedAtEnd, RequestId};
use super::stream::OnFinish;
use crate::auth::Caller;
use crate::catalog::{self, ModelInfo};
use crate::gateway::{Gateway, ResolveError, Target};
use crate::limits::{Facts, Refusal};
use crate::plugins::{Completion, HttpResponse, Operation, PluginCall, Prepared, RequestInfo};
use crate::plugins::{Settlement, SlotKind, Usage};
use crate::redact::Redactor;
use crate::routing::Route;
use crate::state::AppState;
use crate::telemetry::{self, Trace};
use crate::tokenizer::Tokenizer;
use crate::upstream;

pub async fn chat_completions(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Response {
    proxy(&state, &headers, id, Operation::ChatCompletions, body).await
}

pub async fn embeddings(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Response {
    proxy(&state, &headers, id, Operation::Embeddings, body).await
}

pub async fn image_generations(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    id: Option<Extension<RequestId>>,
    body: Body,
) -> Response {
    proxy(&state, &headers, id, Operation::ImageGenerations, body).await
}

/// Proxies one request. Its log line is written when it ends (by the recorder's telemetry,
/// which knows the tokens), so the response is marked for the request-log middleware.
async fn proxy(
    state: &AppState,
    headers: &HeaderMap,
    id: Option<Extension<RequestId>>,
    operation: Operation,
    body: Body,
) -> Response {
    let mut response = match forward(state, headers, id, operation, body).await {
        Ok(response) => response,
        Err(error) => error.into_response(),
    };
    response.extensions_mut().insert(LoggedAtEnd);
    response
}

async fn forward(
    state: &AppState,
    headers: &HeaderMap,
    id: Option<Extension<RequestId>>,
    operation: Operation,
    body: Body,
) -> Result<Response, ApiError> {
    let gateway = state.gateway.load_full();
    let request_id = id.map(|Extension(RequestId(id))| id).unwrap_or_default();
    let (path, name) = match operation {
        Operation::ChatCompletions => ("/v1/chat/completions", "chat"),
        Operation::Embeddings => ("/v1/embeddings", "embeddings"),
        Operation::ImageGenerations => ("/v1/images/generations", "image_generation"),
        Operation::ListModels => ("/v1/models", "models"),
    };
    let telemetry = state.telemetry.request(headers, path, name, &request_id);
    let trace = telemetry.trace().clone();
    let span = trace.stage("auth");
    let required = gateway.config.auth.required;
    let caller = span.scope(auth::caller(state, headers, required)).await;
    drop(span);
    // A refused request is recorded too, under the project it claimed.
    let Caller { project, key_id } = match &caller {
        Ok(caller) => caller.clone(),
        Err(_) => auth::anonymous(headers),
    };
    let mut recorder = Recorder::new(
        &state.ledger,
        request_id,
        project,
        key_id,
        operation,
        telemetry,
        gateway.secrets.for_request(headers),
    );
    let caller = match caller {
        Ok(caller) => caller,
        Err(error) => {
            recorder.failed(&error);
            return Err(error);
        }
    };
    // The body's share of the budget is kept while its parsed form lives: to the answer.
    let mut _reservation = None;
    let parsed = match body::read(state, body).await {
        Ok((bytes, reservation)) => {
            _reservation = Some(reservation);
            ClientRequest::parse(operation, &bytes)
        }
        Err(error) => Err(error),
    };
    let mut request = match parsed {
        Ok(request) => request,
        Err(error) => {
            recorder.failed(&error);
            return Err(error);
        }
    };
    recorder.request(&request);
    let outcome = recorder.outcome();
    let model = std::mem::take(&mut request.model);
    let admitted = admit(state, &gateway, (&caller, &trace), &request, &model).await;
    let (settle, limit_headers) = match admitted {
        Ok(admitted) => admitted,
        Err(error) => {
            recorder.failed(&error);
            return Err(error);
        }
    };
    // Called once when the request is over: settles the limits, then records the usage.
    let mut finish: Option<OnFinish> = Some(Box::new(move |usage, cost, succeeded| {
        if let Some(settle) = settle {
            settle(usage, cost, succeeded);
        }
        recorder.finish(usage, cost, succeeded);
    }));
    let result = match gateway.routes.get(&model) {
        Some(route) => {
            let attempt = (&mut request, &mut finish, &outcome, &trace);
            routed(state, &gateway, route, (&model, &caller.project), attempt).await
        }
        None => match gateway.resolve(&model) {
            Ok(target) => attempt(
                state,
                &mut request,
                &target,
                &mut finish,
                (&outcome, &trace),
            )
            .await
            .map(|(response, usage, cost)| (with_route_headers(response, &target, 1), usage, cost)),
            Err(ResolveError::NotFound) => Err(ApiError::ModelNotFound(model.clone())),
            Err(ResolveError::Ambiguous(candidates)) => Err(ApiError::AmbiguousModel {
                model: model.clone(),
                candidates,
            }),
        },
    };
    // A stream took `finish` with it and calls it when it ends; anything else is over now.
    match result {
        Ok((mut response, usage, cost)) => {
            outcome.status(response.status().as_u16());
            if let Some(finish) = finish.take() {
                finish(usage, cost, true);
            }
            let headers = response.headers_mut();
            for (name, value) in limit_headers {
                if let (Ok(name), Ok(value)) = (
                    axum::http::HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(&value),
                ) {
                    headers.insert(name, value);
                }
            }
            Ok(response)
        }
        Err(error) => {
            outcome.error(&error);
            if let Some(finish) = finish.take() {
                finish(None, None, false);
            }
            Err(error)
        }
    }
}

/// Checks the limits; an admitted request gets the hook that settles them when it is done
/// (none without limit rules).
async fn admit(
    state: &AppState,
    gateway: &Gateway,
    (caller, trace): (&Caller, &Trace),
    request: &ClientRequest,
    model: &str,
) -> Result<(Option<OnFinish>, Vec<(String, String)>), ApiError> {
    if gateway.limits.is_empty() {
        return Ok((None, Vec::new()));
    }
    let span = trace.stage("limits");
    let estimated_input_tokens = request.estimate_input_tokens(Tokenizer);
    let max_output_tokens = request.max_output_tokens();
    let facts = Facts {
        project: &caller.project,
        api_key_id: caller.key_id.as_deref(),
        user_id: request.user.id.as_deref(),
        model,
        estimated_input_tokens,
        max_output_tokens,
        estimated_cost_micros: estimate_cost(
            gateway,
            model,
            estimated_input_tokens,
            max_output_tokens.unwrap_or(DEFAULT_OUTPUT_ESTIMATE),
        ),
    };
    let admitted = span.scope(gateway.limits.admit(&facts)).await;
    let admission = admitted.map_err(|refusal| {
        let error = match refusal {
            Refusal::Denied(denial) => ApiError::LimitExceeded(denial),
            Refusal::Unavailable(failure) => ApiError::limits_unavailable(failure),
        };
        trace.denied(error.detail().code.unwrap_or("limit"));
        error
    })?;
    drop(span);
    let headers = admission.headers.clone();
    let background = state.background.clone();
    let finish: OnFinish = Box::new(move |usage: Option<Usage>, cost, succeeded| {
        let settlement = Settlement {
            input_tokens: usage.map_or(0, |u| u.input_tokens),
            output_tokens: usage.map_or(0, |u| u.output_tokens),
            cost_micros: cost,
            succeeded,
        };
        background.spawn(admission.settle(settlement));
    });
    Ok((Some(finish), headers))
}

/// A request to a virtual model: the router orders the targets, and each is tried in turn
/// while attempts fail in a way another target may not (connect errors, timeouts, 429, 5xx).
/// Nothing is retried once a response has started: a stream's first byte ends the choosing.
async fn routed(
    state: &AppState,
    gateway: &Gateway,
    route: &Route,
    (model, project): (&str, &str),
    (request, finish, outcome, trace): (
        &mut ClientRequest,
        &mut Option<OnFinish>,
        &OutcomeCell,
        &Trace,
    ),
) -> Result<(Response, Option<Usage>, Option<i64>), ApiError> {
    let observed = route.observed(&state.stats, Instant::now());
    let random = uuid::Uuid::new_v4().as_u64_pair();
    let facts = route_request(
        model,
        project,
        &request.user,
        request.estimate_input_tokens(Tokenizer),
        request.stream,
        random.0,
    );
    let no_route = |message: String| ApiError::NoRoute {
        model: model.to_owned(),
        message,
    };
    let mut span = trace.stage("route");
    span.set("wasmgate.route", model.to_owned());
    let order = span
        .scope(route.router.route(&route.options, &facts, &observed))
        .await
        .map_err(ApiError::plugin)?
        .map_err(no_route)?;
    drop(span);
    let plan = route.plan(&order, &observed);
    let last = plan.len();
    if last == 0 {
        return Err(no_route("the router chose no target".to_owned()));
    }
    for (n, &i) in plan.iter().enumerate() {
        if n > 0 {
            tokio::time::sleep(route.backoff(n as u32, random.1.rotate_left(n as u32 * 8))).await;
        }
        let id = &route.targets[i].id;
        let target = gateway
            .resolve(id)
            .map_err(|_| ApiError::ModelNotFound(id.clone()))?;
        let stats = state.stats.get(id).begin(route.breaker);
        match attempt(state, request, &target, finish, (outcome, trace)).await {
            Ok((response, usage, cost)) => {
                trace.routed(model, id, n, "ok");
                stats.succeeded(request.stream, usage.map(|u| u.output_tokens));
                return Ok((with_route_headers(response, &target, n + 1), usage, cost));
            }
            Err(error) if error.is_target_failure() => {
                trace.routed(model, id, n, "failed");
                stats.failed();
                if n + 1 == last {
                    return Err(error);
                }
                tracing::info!(
                    model,
                    target = id.as_str(),
                    "attempt failed, trying the next target: {}",
                    error.detail().message
                );
            }
            // The client's own mistake: another target would refuse it too.
            Err(error) => {
                trace.routed(model, id, n, "rejected");
                return Err(error);
            }
        }
    }
    Err(no_route("every target failed".to_owned()))
}

/// One attempt at one target, in a span of its own. Returns the response and, for whole
/// answers, the usage; a stream takes `finish` and reports its usage when it ends.
async fn attempt(
    state: &AppState,
    request: &mut ClientRequest,
    target: &Target<'_>,
    finish: &mut Option<OnFinish>,
    (outcome, trace): (&OutcomeCell, &Trace),
) -> Result<(Response, Option<Usage>, Option<i64>), ApiError> {
    let provider = target.provider;
    let operation = match request.operation {
        Operation::Embeddings => "embeddings",
        Operation::ImageGenerations => "image_generation",
        Operation::ChatCompletions | Operation::ListModels => "chat",
    };
    let mut span = trace.attempt(
        operation,
        &provider.name,
        provider.plugin.name(),
        &outcome.redactor().text(target.model),
    );
    let scope = span.span().scope_handle();
    let result = scope
        .run(send(state, request, target, finish, outcome, &mut span))
        .await;
    if let Err(error) = &result {
        span.failed(
            trace.metrics(),
            &error.error_type(),
            &error.detail().message,
            error.is_target_failure(),
        );
    }
    result
}

async fn send(
    state: &AppState,
    request: &mut ClientRequest,
    target: &Target<'_>,
    finish: &mut Option<OnFinish>,
    outcome: &OutcomeCell,
    span: &mut telemetry::Attempt,
) -> Result<(Response, Option<Usage>, Option<i64>), ApiError> {
    outcome.target(target);
    let price = target.provider.price(target.model);
    let cost = move |usage: Option<Usage>| {
        usage
            .zip(price.as_deref())
            .map(|(u, info)| usage_cost(info, u))
    };
    let canonical = request.canonical(target.model);
    let info = RequestInfo {
        operation: request.operation,
        model: canonical.model.clone(),
        stream: canonical.stream,
    };
    let provider = target.provider;
    // A stream request's instance may become its decoder and live as long as the stream.
    let kind = if request.stream {
        SlotKind::Stream
    } else {
        SlotKind::Call
    };
    let mut call = provider
        .plugin
        .start(kind)
        .await
        .map_err(ApiError::plugin)?;
    let redactor = outcome.redactor();
    let prepared = call
        .prepare(&provider.config, &canonical)
        .await
        .map_err(|failure| ApiError::prepare_failed(failure, canonical.body.len()))?
        .map_err(|error| ApiError::provider(&provider.name, error, redactor))?;

    Ok(match prepared {
        Prepared::Local(completion) => {
            let usage = completion.usage;
            span.completion(&completion.body, usage);
            (json_response(completion), usage, cost(usage))
        }
        Prepared::LocalStream(output) => {
            outcome.first_output();
            let usage = output.usage;
            let response = stream::local(output, request.client_wants_usage).into_response();
            (response, usage, cost(usage))
        }
        Prepared::Upstream(mut http) => {
            if let Some(traceparent) = span.traceparent() {
                http.headers
                    .retain(|(name, _)| !name.eq_ignore_ascii_case("traceparent"));
                http.headers.push(("traceparent".to_owned(), traceparent));
            }
            let admitted =
                provider
                    .scope
                    .admit(http)
                    .map_err(|reason| ApiError::UnsafeUpstreamUrl {
                        provider: provider.name.to_string(),
                        model: upstream::shorten(target.model, MODEL_SHOWN),
                        reason,
                    })?;
            let upstream = upstream::send(&state.http, admitted, provider.timeout)
                .await
                .map_err(|e| ApiError::upstream(&provider.name, e))?;
            span.status(upstream.status().as_u16());
            if request.stream && upstream.status().is_success() {
                let headers = header_pairs(upstream.headers());
                let decoder = call
                    .open_stream(&provider.config, &info, &headers)
                    .await
                    .map_err(ApiError::plugin)?;
                let response = stream::relay(
                    std::sync::Arc::clone(&provider.name),
                    decoder,
                    upstream,
                    provider.timeout,
                    request.client_wants_usage,
                    finish.take().map(|finish| -> OnFinish {
                        Box::new(move |usage, _, ok| finish(usage, cost(usage), ok))
                    }),
                    Some(outcome.clone()),
                )
                .into_response();
                (response, None, None)
            } else {
                let completion = complete(&mut call, target, &info, upstream, redactor).await?;
                let usage = completion.usage;
                span.completion(&completion.body, usage);
                (json_response(completion), usage, cost(usage))
            }
        }
    })
}

/// Characters of a client's model name an error message repeats.
const MODEL_SHOWN: usize = 64;

/// Output tokens assumed for a cost estimate when the client sets no `max_tokens`.
const DEFAULT_OUTPUT_ESTIMATE: u32 = 1024;

/// A request's cost in micro-USD at `info`'s prices. Plugins count cache writes inside the
/// input tokens; the catalog prices them apart.
pub(super) fn usage_cost(info: &ModelInfo, usage: Usage) -> i64 {
    let cache_write = usage.cache_write_tokens.min(usage.input_tokens);
    catalog::cost_micros(
        info,
        usage.input_tokens - cache_write,
        usage.output_tokens,
        usage.cached_input_tokens,
        cache_write,
        u64::from(usage.images),
    )
}

/// What a request may cost, for budgets to reserve: at the model's prices, or for a virtual
/// model at its dearest target's. `None` when no price is known.
fn estimate_cost(gateway: &Gateway, model: &str, input: u32, output: u32) -> Option<i64> {
    let usage = Usage {
        input_tokens: u64::from(input),
        output_tokens: u64::from(output),
        cached_input_tokens: 0,
        cache_write_tokens: 0,
        images: 0,
    };
    let price = |id: &str| {
        let target = gateway.resolve(id).ok()?;
        target.provider.price(target.model)
    };
    match gateway.routes.get(model) {
        Some(route) => route
            .targets
            .iter()
            .filter_map(|t| price(&t.id))
            .map(|info| usage_cost(&info, usage))
            .max(),
        None => price(model).map(|info| usage_cost(&info, usage)),
    }
}

/// Reads a whole upstream response and has the plugin translate it.
async fn complete(
    call: &mut PluginCall,
    target: &Target<'_>,
    info: &RequestInfo,
    upstream: reqwest::Response,
    redactor: &Redactor,
) -> Result<Completion, ApiError> {
    let provider = target.provider;
    let status = upstream.status().as_u16();
    let headers = header_pairs(upstream.headers());
    let body = upstream::read_body(upstream, provider.timeout)
        .await
        .map_err(|e| ApiError::upstream(&provider.name, e))?;
    let response = HttpResponse {
        status,
        headers,
        body: body.to_vec(),
    };
    call.parse_response(&provider.config, info, &response)
        .await
        .map_err(ApiError::plugin)?
        .map_err(|error| ApiError::provider(&provider.name, error, redactor))
}

/// Headers as plugins receive them: lower-case names (as `http` keeps them), UTF-8 values.
fn header_pairs(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_owned(), v.to_str().ok()?.to_owned())))
        .collect()
}

fn json_response(completion: Completion) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        completion.body,
    )
        .into_response()
}

/// Names the provider and model that answered, and how many attempts it took.
fn with_route_headers(mut response: Response, target: &Target<'_>, attempts: usize) -> Response {
    let headers = response.headers_mut();
    headers.insert("x-wasmgate-attempts", HeaderValue::from(attempts));
    if let Ok(v) = HeaderValue::from_str(&target.provider.name) {
        headers.insert("x-wasmgate-provider", v);
    }
    if let Ok(v) = HeaderValue::from_str(target.model) {
        headers.insert("x-wasmgate-model", v);
    }
    response
}

/// The facts a router decides on.
fn route_request(
    model: &str,
    project: &str,
    user: &super::UserInfo,
    estimated_input_tokens: u32,
    stream: bool,
    random: u64,
) -> crate::plugins::RouteRequest {
    crate::plugins::RouteRequest {
        model: model.to_owned(),
        project: project.to_owned(),
        user_id: user.id.clone(),
        user_name: user.name.clone(),
        user_tags: user.tags.clone(),
        estimated_input_tokens,
        stream,
        metadata: user.metadata.clone(),
        random,
    }
}
