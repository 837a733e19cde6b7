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

mod decode;
mod encode;
mod frame;
mod hit;
mod json_array;
mod out;
mod replay;
mod routes;

use std::sync::Arc;

use serde_json::Value;

use super::error::ApiError;
use super::raw_json::Fields;
use crate::gateway::Gateway;
use crate::plugins::{
    AnswerInfo, CanonicalRequest, DialectPlugin, Failure, Framing, Matched, Mounted, NativeCall,
    Operation, PluginError, PluginFailure,
};

pub use decode::{decode, forwarded};
pub use encode::error_body;
pub use out::{Outcome, out};
pub use replay::Keeper;
pub use routes::{count_tokens, models};

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
