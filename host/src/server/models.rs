//! `GET /v1/models` and `GET /v1/models/{id}`: every model the config makes reachable, to
//! callers the auth stage lets through (as for the rest of `/v1`: listing may ask upstreams,
//! with the providers' keys). A key with its own model list sees only the models it may call,
//! matched by the same rule the request path applies; any other id is unknown to it.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::Serialize;

use crate::catalog::ModelInfo;
use crate::error::ApiError;
use crate::gateway::{Gateway, Provider};
use crate::pipeline::caller as auth;
use crate::plugins::{CanonicalRequest, Operation, Prepared, SlotKind};
use crate::redact::Secrets;
use crate::state::AppState;
use crate::upstream;

#[derive(Serialize)]
pub struct ModelList {
    object: &'static str,
    data: Vec<Model>,
}

#[derive(Serialize)]
pub struct Model {
    id: String,
    object: &'static str,
    created: u64,
    owned_by: String,
    /// What the catalog knows of the model: extra fields, left out for models it does not know.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    details: Option<Details>,
}

/// A catalog entry as `/v1/models` shows it.
#[derive(Serialize)]
struct Details {
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_window: Option<u64>,
    capabilities: Capabilities,
    /// USD, as providers publish prices; left out when no price is known.
    #[serde(skip_serializing_if = "Pricing::is_empty")]
    pricing: Pricing,
}

#[derive(Serialize)]
struct Capabilities {
    tools: bool,
    vision: bool,
    json_mode: bool,
}

#[derive(Serialize)]
struct Pricing {
    #[serde(skip_serializing_if = "Option::is_none")]
    input_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cached_input_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_write_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_image: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_1k_searches: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_audio_minute: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_mchar: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    audio_input_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cached_audio_input_per_mtok: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    audio_output_per_mtok: Option<f64>,
}

impl Pricing {
    fn is_empty(&self) -> bool {
        [
            self.input_per_mtok,
            self.output_per_mtok,
            self.cached_input_per_mtok,
            self.cache_write_per_mtok,
            self.per_image,
            self.per_1k_searches,
            self.per_audio_minute,
            self.per_mchar,
            self.audio_input_per_mtok,
            self.cached_audio_input_per_mtok,
            self.audio_output_per_mtok,
        ]
        .iter()
        .all(Option::is_none)
    }
}

impl Details {
    /// Prices are integers (pico-USD per token or image) inside; floats only here, at the edge.
    fn of(info: &ModelInfo) -> Self {
        let per_mtok = |pico: Option<i64>| pico.map(|p| p as f64 / 1e6);
        let per_unit = |pico: Option<i64>| pico.map(|p| p as f64 / 1e12);
        let prices = &info.prices;
        Details {
            kind: info.kind.name(),
            context_window: info.context_window,
            capabilities: Capabilities {
                tools: info.capabilities.tools,
                vision: info.capabilities.vision,
                json_mode: info.capabilities.json_mode,
            },
            pricing: Pricing {
                input_per_mtok: per_mtok(prices.input),
                output_per_mtok: per_mtok(prices.output),
                cached_input_per_mtok: per_mtok(prices.cached_input),
                cache_write_per_mtok: per_mtok(prices.cache_write),
                per_image: per_unit(prices.per_image),
                per_1k_searches: prices.per_search_unit.map(|p| p as f64 / 1e9),
                per_audio_minute: prices.per_audio_second.map(|p| p as f64 * 60.0 / 1e12),
                per_mchar: per_mtok(prices.per_character),
                audio_input_per_mtok: per_mtok(prices.audio_input),
                cached_audio_input_per_mtok: per_mtok(prices.cached_audio_input),
                audio_output_per_mtok: per_mtok(prices.audio_output),
            },
        }
    }
}

/// A provider's model as listed.
fn provider_model(state: &AppState, provider: &Provider, name: &str) -> Model {
    Model {
        id: format!("{}/{name}", provider.name),
        object: "model",
        created: state.started_unix,
        owned_by: provider.name.to_string(),
        details: provider.info(name).map(Details::of),
    }
}

pub async fn list(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Result<Json<ModelList>, ApiError> {
    let gateway = state.gateway.load_full();
    let caller = auth::caller(&state, &headers, gateway.config.auth.required).await?;
    let mut data = Vec::new();
    for provider in &gateway.providers {
        let names = if provider.passthrough() {
            // An entry that declares no models serves whatever its upstream lists.
            discover(&state, provider, &gateway.secrets).await
        } else {
            provider.config.models.clone()
        };
        data.extend(
            names
                .iter()
                .map(|name| provider_model(&state, provider, name)),
        );
    }
    // Virtual models (routing:) are called by their bare name.
    data.extend(gateway.config.routing.keys().map(|name| Model {
        id: name.clone(),
        object: "model",
        created: state.started_unix,
        owned_by: VIRTUAL_OWNER.to_owned(),
        details: None,
    }));
    data.retain(|model| caller.limits.allows_model(&model.id));
    Ok(Json(ModelList {
        object: "list",
        data,
    }))
}

/// `owned_by` of virtual models.
const VIRTUAL_OWNER: &str = "wasmgate";

pub async fn retrieve(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    id: Result<Path<String>, PathRejection>,
) -> Result<Json<Model>, ApiError> {
    let gateway: Arc<Gateway> = state.gateway.load_full();
    let caller = auth::caller(&state, &headers, gateway.config.auth.required).await?;
    let Ok(Path(id)) = id else {
        return Err(ApiError::InvalidField {
            param: "model".to_owned(),
            message: "The model id in the URL is not valid percent-encoded UTF-8.".to_owned(),
        });
    };
    crate::pipeline::request::check_model(&id)?;
    // The same 404 as an unknown model: a key learns nothing of models outside its list.
    if !caller.limits.allows_model(&id) {
        return Err(ApiError::ModelNotFound(id));
    }
    if gateway.routes.contains_key(&id) {
        return Ok(Json(Model {
            object: "model",
            created: state.started_unix,
            owned_by: VIRTUAL_OWNER.to_owned(),
            id,
            details: None,
        }));
    }
    let target = gateway
        .resolve(&id)
        .map_err(|_| ApiError::ModelNotFound(id.clone()))?;
    Ok(Json(provider_model(&state, target.provider, target.model)))
}

/// Asks a provider's plugin (and through it, the upstream) which models it serves. Failures
/// are logged and the entry contributes no models, so one broken upstream cannot break the list.
async fn discover(state: &AppState, provider: &Provider, secrets: &Secrets) -> Vec<String> {
    let request = CanonicalRequest {
        native: None,
        operation: Operation::ListModels,
        model: String::new(),
        body: "{}".to_owned(),
        stream: false,
        headers: Vec::new(),
    };
    let result = async {
        let mut call = provider
            .plugin
            .start(SlotKind::Call)
            .await
            .map_err(|e| e.to_string())?;
        let completion = match call.prepare(&provider.config, &request).await {
            Ok(Ok(Prepared::Local(completion))) => completion,
            Ok(Ok(Prepared::Upstream(http))) => {
                let timeout = provider.timeout.min(std::time::Duration::from_secs(10));
                let admitted = provider.scope.admit(http).map_err(|e| e.to_string())?;
                let response = upstream::send(&state.http, admitted, timeout)
                    .await
                    .map_err(|e| e.to_string())?;
                let status = response.status().as_u16();
                let body = upstream::read_body(response, timeout)
                    .await
                    .map_err(|e| e.to_string())?;
                let response = crate::plugins::HttpResponse {
                    status,
                    headers: Vec::new(),
                    body: body.to_vec(),
                };
                let info = crate::plugins::RequestInfo {
                    native: None,
                    operation: Operation::ListModels,
                    model: String::new(),
                    stream: false,
                };
                call.parse_response(&provider.config, &info, &response)
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.message)?
            }
            Ok(Ok(Prepared::LocalStream(_))) => return Err("unexpected stream".to_owned()),
            Ok(Ok(Prepared::UpstreamForm(_) | Prepared::UpstreamRaw(_))) => {
                return Err("unexpected upload or audio request".to_owned());
            }
            Ok(Err(e)) => return Err(e.message),
            Err(e) => return Err(e.to_string()),
        };
        #[derive(serde::Deserialize)]
        struct Listed {
            data: Vec<Id>,
        }
        #[derive(serde::Deserialize)]
        struct Id {
            id: String,
        }
        serde_json::from_str::<Listed>(&completion.body)
            .map(|l| l.data.into_iter().map(|m| m.id).collect())
            .map_err(|e| format!("unreadable model list: {e}"))
    }
    .await;
    result.unwrap_or_else(|e| {
        // The upstream's error text may repeat the key it was sent.
        let e = secrets.redact(&e);
        tracing::warn!(provider = &*provider.name, "cannot list models: {e}");
        Vec::new()
    })
}
