//! The pipeline's edge: the client's API, in at the start and out at the end. A request of a
//! registry dialect (Anthropic's Messages, OpenAI's Responses, Google's GenAI, ...) is decoded
//! once by its dialect's plugin into the canonical request ([`decode`]), and everything the
//! stages hand back (a whole answer, a stream, a local or cached answer, an error) leaves
//! through one way out ([`out`]), encoded back by the plugin unless the target spoke the
//! dialect itself. Chat Completions is the identity edge on the same path: its body is the
//! canonical one, and its answers are written as they are.
//!
//! Between the two the stages speak only the canonical form, or the client's own body, which a
//! target that speaks the dialect gets untouched ([`Translation::native_request`]). Which
//! dialect it is comes from the route the server matched ([`Edge`]); nothing here knows a
//! dialect by name ([`operation_of`] matches a declared name to the provider contract's
//! operations).
//!
//! Responses the client asks to keep (`store`, the default) are kept in the ledger's database,
//! whichever upstream answered, and a `previous_response_id` is replayed from there, so that a
//! conversation can move between providers and replicas (see `replay.rs`).
//!
//! Here: the way in ([`decode`]), the request's [`Translation`], and a dialect's routes that are
//! no model call ([`count_tokens`], [`models`]). Beside it: `out.rs` (the way out), `encode.rs`
//! (the plugin's encodings), `frame.rs` (a stream written for the client), `hit.rs` (a cache
//! hit written), `json_array.rs` (a stream as one JSON array), `replay.rs` (Responses kept and
//! replayed).

mod encode;
mod frame;
mod hit;
mod json_array;
mod out;
mod replay;

use std::sync::Arc;

use axum::body::{Body, Bytes};
use serde_json::Value;

use super::context::Context;
use super::count::{Counted, Counter};
use super::error::ApiError;
use super::parse::Inbound;
use super::raw_json::{self, Fields, MAX_FIELDS, Unreadable};
use super::request::ClientRequest;
use crate::gateway::Gateway;
use crate::plugins::{
    AnswerInfo, Canonical, CanonicalRequest, Decoded, DialectCallRequest, DialectPlugin, Failure,
    Framing, Matched, Mounted, NativeCall, Operation, PluginError, PluginFailure, SlotKind,
};
use crate::state::AppState;

pub use encode::error_body;
pub use out::{Outcome, out};
use replay::Keeper;

/// A request on a registry dialect's route: the route, and the config snapshot it was found in
/// (the request runs on that one, and its errors are written by that snapshot's plugin).
pub struct Edge {
    pub gateway: Arc<Gateway>,
    pub matched: Matched,
}

/// The operation a dialect's request carries from its arrival: a dialect whose declared name is
/// an operation of the provider contract (`messages`, `responses`, which providers list in
/// `native-operations`) carries that one; any other, the canonical operation its plugin decodes
/// it into (it is recorded under its own name either way, see `Context::recorded_as`).
pub fn operation_of(dialect: &Mounted) -> Operation {
    crate::plugins::operation_named(&dialect.name).unwrap_or(Operation::ChatCompletions)
}

/// Client headers a native target may need (versions and beta flags), passed to its plugin.
const FORWARDED: [&str; 3] = ["anthropic-version", "anthropic-beta", "openai-beta"];
/// Bytes of a forwarded header value, at most.
const FORWARDED_MAX: usize = 1024;

/// What a dialect request carries beside its canonical form.
pub struct Translation {
    plugin: DialectPlugin,
    /// The dialect, its route's name and parameters (for a native target).
    pub dialect: Arc<Mounted>,
    pub(super) route: String,
    params: Vec<(String, String)>,
    /// How a streamed answer is framed for the client.
    framing: Framing,
    /// The client's body (with `previous_response_id` replayed into `input`), for targets that
    /// speak the dialect natively.
    native: Fields,
    headers: Vec<(String, String)>,
    echo: String,
    /// The id of a translated answer (`msg_…`, `resp_…`).
    answer_id: String,
    created: u64,
    /// Where the answer is kept (Responses with `store`), if anywhere.
    keeper: Option<Keeper>,
    /// The `previous_response_id` the request continued. A native target never sees it (the
    /// conversation is replayed into `input`), so its answer is told.
    previous_id: Option<String>,
}

/// The edge's way in: reads the body (under the body budget) and decodes a dialect's into the
/// canonical form, keeping in `cx.translation` what the way out needs to answer in the dialect
/// (its plugin, the client's own body, the framing). Chat Completions' body is already
/// canonical; a multipart upload is read by the parse stage.
pub async fn decode(
    state: &AppState,
    cx: &mut Context,
    headers: &http::HeaderMap,
    body: Body,
) -> Result<Inbound, ApiError> {
    if matches!(
        cx.operation,
        Operation::AudioTranscriptions | Operation::AudioTranslations
    ) {
        return Ok(Inbound::Upload(body));
    }
    let (bytes, reservation) = super::body::read(state, body).await?;
    let Some(edge) = cx.edge.clone() else {
        return Ok(Inbound::Json {
            operation: cx.operation,
            bytes,
            reservation,
        });
    };
    let plugin = edge.dialect.plugin.clone();
    let mut fields = raw_json::object(&bytes, MAX_FIELDS).map_err(|e| match e {
        Unreadable::Syntax(_)
        | Unreadable::NotAnObject
        | Unreadable::TooDeep
        | Unreadable::TooManyFields => ApiError::InvalidJson(e.to_string()),
    })?;
    // Only the Responses API chains turns (`previous_response_id`) through the store.
    let keeper = if cx.operation == Operation::Responses {
        replay::replay(cx, &mut fields).await?
    } else {
        None
    };
    let previous_id = fields
        .get("previous_response_id")
        .and_then(|raw| raw_json::string(raw));
    let decoded = decode_fields(&plugin, &edge, &fields).await?;
    if !decoded.dropped.is_empty() {
        tracing::debug!(
            dialect = edge.dialect.name.as_str(),
            dropped = decoded.dropped.join(",").as_str(),
            "fields the canonical form cannot carry were dropped"
        );
    }
    let canonical = canonical_operation(decoded.operation);
    if cx.operation == Operation::ChatCompletions {
        cx.operation = canonical;
    }
    fields.shift_remove("previous_response_id");
    let prefix = if cx.operation == Operation::Messages {
        "msg_"
    } else {
        "resp_"
    };
    cx.translation = Some(Translation {
        plugin,
        dialect: Arc::clone(&edge.dialect),
        route: edge.route().name.clone(),
        params: edge.params.clone(),
        framing: decoded.framing,
        native: fields,
        headers: forwarded(headers),
        echo: decoded.echo,
        answer_id: format!("{prefix}{}", uuid::Uuid::new_v4().simple()),
        created: u64::try_from(cx.arrived_us / 1_000_000).unwrap_or(0),
        keeper,
        previous_id,
    });
    Ok(Inbound::Json {
        operation: canonical,
        bytes: Bytes::from(decoded.body),
        reservation,
    })
}

/// The host's operation for a plugin's canonical one.
fn canonical_operation(canonical: Canonical) -> Operation {
    match canonical {
        Canonical::ChatCompletions => Operation::ChatCompletions,
        Canonical::Embeddings => Operation::Embeddings,
    }
}

/// The dialect plugin's decoding of a body on `edge`'s route, on an instance of its own.
async fn decode_fields(
    plugin: &DialectPlugin,
    edge: &Matched,
    fields: &Fields,
) -> Result<Decoded, ApiError> {
    let body = serde_json::to_string(fields).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    let request = DialectCallRequest {
        route: edge.route().name.clone(),
        params: edge.params.clone(),
        body,
    };
    let mut call = plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    answered(call.decode(&request).await)
}

/// The allowlisted client headers, bounded and printable.
pub fn forwarded(headers: &http::HeaderMap) -> Vec<(String, String)> {
    FORWARDED
        .iter()
        .filter_map(|name| {
            let value = headers.get(*name)?.to_str().ok()?.trim();
            (value.len() <= FORWARDED_MAX && !value.is_empty())
                .then(|| ((*name).to_owned(), value.to_owned()))
        })
        .collect()
}

impl Translation {
    /// The client's own body for a target that speaks the dialect, with `model` set to the
    /// upstream's name for it.
    pub fn native_request(
        &self,
        operation: Operation,
        upstream_model: &str,
        stream: bool,
    ) -> CanonicalRequest {
        let mut body = self.native.clone();
        let legacy = matches!(operation, Operation::Messages | Operation::Responses);
        // A dialect that puts the model in its path (Google's) has none in its body.
        if (legacy || body.contains_key("model"))
            && let Ok(model) = serde_json::value::to_raw_value(upstream_model)
        {
            body.insert("model".to_owned(), model);
        }
        let native = (!legacy).then(|| NativeCall {
            dialect: self.dialect.name.clone(),
            route: self.route.clone(),
            params: self
                .params
                .iter()
                .map(|(name, value)| match name.as_str() {
                    "model" => (name.clone(), upstream_model.to_owned()),
                    _ => (name.clone(), value.clone()),
                })
                .collect(),
        });
        CanonicalRequest {
            operation,
            native,
            model: upstream_model.to_owned(),
            body: serde_json::to_string(&body).unwrap_or_else(|_| "{}".to_owned()),
            stream,
            headers: self.headers.clone(),
        }
    }

    /// The client's own body and the headers forwarded with it: what a target that speaks the
    /// dialect gets, and so what the cache's key is made of.
    pub fn native_parts(&self) -> (&Fields, &[(String, String)]) {
        (&self.native, &self.headers)
    }

    fn info(&self, model: &str, estimated_input_tokens: u32) -> AnswerInfo {
        AnswerInfo {
            route: self.route.clone(),
            model: model.to_owned(),
            id: self.answer_id.clone(),
            created: self.created,
            estimated_input_tokens,
            echo: self.echo.clone(),
        }
    }

    /// A native Responses object (or an event carrying one) with the `previous_response_id` the
    /// client sent, which the target was not given. Anything else is returned as it is.
    pub fn with_previous_id(&self, json: String) -> String {
        let Some(previous) = &self.previous_id else {
            return json;
        };
        if !json.contains("\"previous_response_id\"") {
            return json;
        }
        let Ok(mut value) = serde_json::from_str::<Value>(&json) else {
            return json;
        };
        let target = match value.get("response") {
            Some(Value::Object(_)) => value.get_mut("response"),
            _ => Some(&mut value),
        };
        match target {
            Some(Value::Object(object)) if object.contains_key("previous_response_id") => {
                object.insert(
                    "previous_response_id".to_owned(),
                    Value::from(previous.as_str()),
                );
                value.to_string()
            }
            _ => json,
        }
    }
}

/// A dialect plugin call's outcome: its value, or the error the client sees (the plugin
/// failed, or it refused the request in its own terms).
fn answered<T>(called: Result<Result<T, Failure>, PluginFailure>) -> Result<T, ApiError> {
    called
        .map_err(ApiError::plugin)?
        .map_err(|failure| ApiError::DialectRejected(plugin_error(failure)))
}

/// A dialect plugin's failure as the host's typed plugin error.
fn plugin_error(failure: Failure) -> PluginError {
    PluginError {
        kind: failure.kind,
        message: failure.message,
        param: failure.param,
        code: failure.code,
        upstream_status: None,
    }
}

/// A `count-tokens` route (`/v1/messages/count_tokens`, Google's `:countTokens`, OpenAI's
/// `/v1/responses/input_tokens`): the prompt's tokens by the target's own counting endpoint,
/// natively or translated (see `count.rs`), else by the gateway's own tokenizer (the one
/// limits and estimates use), the body then written by the dialect's plugin; without a
/// ledger record either way. Auth is that of `/v1/*`, a key limited to some models counts only
/// for those, and the limit rules admit it as a request that spends nothing.
pub async fn count_tokens(
    state: &crate::state::AppState,
    edge: &Edge,
    headers: &http::HeaderMap,
    body: axum::body::Body,
) -> Result<(String, Counter), ApiError> {
    let caller = super::auth::caller(state, headers, edge.gateway.config.auth.required).await?;
    let (bytes, _reservation) = super::body::read(state, body).await?;
    let bytes = if bytes.is_empty() {
        &b"{}"[..]
    } else {
        &bytes[..]
    };
    let fields =
        raw_json::object(bytes, MAX_FIELDS).map_err(|e| ApiError::InvalidJson(e.to_string()))?;
    let plugin = &edge.matched.dialect.plugin;
    let decoded = decode_fields(plugin, &edge.matched, &fields).await?;
    if !caller.limits.allows_model(&decoded.model) {
        return Err(ApiError::ModelNotAllowed(decoded.model));
    }
    super::admit::count(&edge.gateway, &caller, &decoded.model, &state.background).await?;
    let operation = canonical_operation(decoded.operation);
    let counted =
        super::count::upstream(state, edge, headers, &caller, &decoded, operation, &fields).await?;
    let (tokens, counter) = match counted {
        Some(Counted::Answer(body)) => return Ok((body, Counter::Upstream)),
        // The dialect's answer carries a `u32`; no prompt a model takes comes near it.
        Some(Counted::Tokens(tokens)) => {
            (u32::try_from(tokens).unwrap_or(u32::MAX), Counter::Upstream)
        }
        None => {
            let request = ClientRequest::parse(operation, decoded.body.as_bytes())?;
            let tokens = request.estimate_input_tokens(crate::tokenizer::Tokenizer);
            (tokens, Counter::Estimate)
        }
    };
    let info = AnswerInfo {
        route: edge.matched.route().name.clone(),
        model: decoded.model,
        id: String::new(),
        created: u64::try_from(crate::ledger::time::now_us() / 1_000_000).unwrap_or(0),
        estimated_input_tokens: tokens,
        echo: decoded.echo,
    };
    let mut call = plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    let body = call
        .encode_count(&info, tokens)
        .await
        .map_err(ApiError::plugin)?;
    Ok((body, counter))
}

/// A `list-models` or `get-model` route's body: the gateway's `list` (OpenAI's JSON) in the
/// dialect's shape.
pub async fn models(edge: &Matched, list: &str) -> Result<String, ApiError> {
    let mut call = edge
        .dialect
        .plugin
        .start(SlotKind::Call)
        .await
        .map_err(ApiError::plugin)?;
    answered(call.encode_models(&edge.route().name, list).await)
}

impl Translation {
    /// The client's own body as a JSON value, for a guard's rewrite to be carried into.
    pub(super) fn native_value(&self) -> Option<Value> {
        serde_json::to_value(&self.native).ok()
    }

    /// The canonical request the dialect plugin reads `native` as (on this request's route):
    /// how an edit of the native body is checked against the guards' canonical one.
    pub(super) async fn decoded_body(&self, native: &Value) -> Option<String> {
        let request = DialectCallRequest {
            route: self.route.clone(),
            params: self.params.clone(),
            body: native.to_string(),
        };
        let mut call = self.plugin.start(SlotKind::Call).await.ok()?;
        Some(call.decode(&request).await.ok()?.ok()?.body)
    }

    /// Replaces the client's body with `native` (the guards' rewrite carried into it).
    pub(super) fn set_native(&mut self, native: &Value) -> bool {
        match serde_json::from_str::<Fields>(&native.to_string()) {
            Ok(fields) => {
                self.native = fields;
                true
            }
            Err(_) => false,
        }
    }
}
