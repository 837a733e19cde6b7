//! What a registry dialect's request carries beside its canonical form ([`Translation`]): its
//! plugin, the client's own body for a target that speaks the dialect, the framing of its
//! stream; and the route the server matched ([`Edge`]). A leaf: the request's context holds
//! it, and nothing here knows a stage.

use std::sync::Arc;

use serde_json::Value;

use super::keeper::Keeper;
use crate::gateway::Gateway;
use crate::pipeline::request::raw_json::Fields;
use crate::plugins::{
    AnswerInfo, CanonicalRequest, DialectCallRequest, DialectPlugin, Framing, Matched, Mounted,
    NativeCall, Operation, SlotKind,
};

/// A request on a registry dialect's route: the route, and the config snapshot it was found in
/// (the request runs on that one, and its errors are written by that snapshot's plugin).
pub struct Edge {
    pub gateway: Arc<Gateway>,
    pub matched: Matched,
}

/// Client headers a native target may need (versions and beta flags), passed to its plugin.
pub const FORWARDED: [&str; 3] = ["anthropic-version", "anthropic-beta", "openai-beta"];
/// Bytes of a forwarded header value, at most.
pub const FORWARDED_MAX: usize = 1024;

/// What a dialect request carries beside its canonical form.
pub struct Translation {
    pub(super) plugin: DialectPlugin,
    /// The dialect, its route's name and parameters (for a native target).
    pub dialect: Arc<Mounted>,
    pub(in crate::pipeline) route: String,
    pub(super) params: Vec<(String, String)>,
    /// How a streamed answer is framed for the client.
    pub(super) framing: Framing,
    /// The client's body (with `previous_response_id` replayed into `input`), for targets that
    /// speak the dialect natively.
    pub(super) native: Fields,
    pub(super) headers: Vec<(String, String)>,
    pub(super) echo: String,
    /// The id of a translated answer (the dialect's declared prefix, then a fresh id).
    pub(super) answer_id: String,
    pub(super) created: u64,
    /// Where the answer is kept (a dialect that chains turns, with `store`), if anywhere.
    pub(super) keeper: Option<Keeper>,
    /// The `previous_response_id` the request continued. A native target never sees it (the
    /// conversation is replayed into `input`), so its answer is told.
    pub(super) previous_id: Option<String>,
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
        // A dialect that puts the model in its path (Google's) has none in its body.
        if body.contains_key("model")
            && let Ok(model) = serde_json::value::to_raw_value(upstream_model)
        {
            body.insert("model".to_owned(), model);
        }
        let native = Some(NativeCall {
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

    pub(in crate::pipeline) fn info(&self, model: &str, estimated_input_tokens: u32) -> AnswerInfo {
        AnswerInfo {
            route: self.route.clone(),
            model: model.to_owned(),
            id: self.answer_id.clone(),
            created: self.created,
            estimated_input_tokens,
            echo: self.echo.clone(),
        }
    }

    /// A native answer object (or an event carrying one, as `response`) of a dialect that
    /// chains turns, with the `previous_response_id` the client sent, which the target was not
    /// given. Anything else is returned as it is.
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

impl Translation {
    /// The client's own body as a JSON value, for a guard's rewrite to be carried into.
    pub(in crate::pipeline) fn native_value(&self) -> Option<Value> {
        serde_json::to_value(&self.native).ok()
    }

    /// The canonical request the dialect plugin reads `native` as (on this request's route):
    /// how an edit of the native body is checked against the guards' canonical one.
    pub(in crate::pipeline) async fn decoded_body(&self, native: &Value) -> Option<String> {
        let request = DialectCallRequest {
            route: self.route.clone(),
            params: self.params.clone(),
            body: native.to_string(),
        };
        let mut call = self.plugin.start(SlotKind::Call).await.ok()?;
        Some(call.decode(&request).await.ok()?.ok()?.body)
    }

    /// Edits the input items a kept Responses answer will list (the guards' rewrite made in
    /// them, so that the store keeps what the upstream was sent).
    pub(in crate::pipeline) fn edit_kept_input(&mut self, edit: impl FnOnce(&mut Value)) {
        if let Some(keeper) = &mut self.keeper
            && let Ok(mut items) = serde_json::from_str::<Value>(&keeper.input_items)
        {
            edit(&mut items);
            keeper.input_items = items.to_string();
        }
    }

    /// Replaces the client's body with `native` (the guards' rewrite carried into it).
    pub(in crate::pipeline) fn set_native(&mut self, native: &Value) -> bool {
        match serde_json::from_str::<Fields>(&native.to_string()) {
            Ok(fields) => {
                self.native = fields;
                true
            }
            Err(_) => false,
        }
    }
}
