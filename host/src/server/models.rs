//! `GET /v1/models` and `GET /v1/models/{id}`: every model the config makes reachable.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;

use super::error::ApiError;
use crate::gateway::{Gateway, Provider};
use crate::plugins::{CanonicalRequest, Operation, Prepared};
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
}

pub async fn list(State(state): State<Arc<AppState>>) -> Json<ModelList> {
    let gateway = state.gateway.load_full();
    let mut data = Vec::new();
    for provider in &gateway.providers {
        let names = if provider.passthrough() {
            // An entry that declares no models serves whatever its upstream lists.
            discover(&state, provider).await
        } else {
            provider.config.models.clone()
        };
        data.extend(names.into_iter().map(|name| Model {
            id: format!("{}/{name}", provider.name),
            object: "model",
            created: state.started_unix,
            owned_by: provider.name.to_string(),
        }));
    }
    // Virtual models (routing:) are called by their bare name.
    data.extend(gateway.config.routing.keys().map(|name| Model {
        id: name.clone(),
        object: "model",
        created: state.started_unix,
        owned_by: VIRTUAL_OWNER.to_owned(),
    }));
    Json(ModelList {
        object: "list",
        data,
    })
}

/// `owned_by` of virtual models.
const VIRTUAL_OWNER: &str = "wasmgate";

pub async fn retrieve(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<Model>, ApiError> {
    let gateway: Arc<Gateway> = state.gateway.load_full();
    if gateway.routes.contains_key(&id) {
        return Ok(Json(Model {
            object: "model",
            created: state.started_unix,
            owned_by: VIRTUAL_OWNER.to_owned(),
            id,
        }));
    }
    let target = gateway
        .resolve(&id)
        .map_err(|_| ApiError::ModelNotFound(id.clone()))?;
    Ok(Json(Model {
        id: format!("{}/{}", target.provider.name, target.model),
        object: "model",
        created: state.started_unix,
        owned_by: target.provider.name.to_string(),
    }))
}

/// Asks a provider's plugin (and through it, the upstream) which models it serves. Failures
/// are logged and the entry contributes no models, so one broken upstream cannot break the list.
async fn discover(state: &AppState, provider: &Provider) -> Vec<String> {
    let request = CanonicalRequest {
        operation: Operation::ListModels,
        model: String::new(),
        body: "{}".to_owned(),
        stream: false,
    };
    let result = async {
        let mut call = provider.plugin.start().await.map_err(|e| e.to_string())?;
        let completion = match call.prepare(&provider.config, &request).await {
            Ok(Ok(Prepared::Local(completion))) => completion,
            Ok(Ok(Prepared::Upstream(http))) => {
                let timeout = provider.timeout.min(std::time::Duration::from_secs(10));
                let response = upstream::send(&state.http, http, timeout)
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
        tracing::warn!(provider = &*provider.name, "cannot list models: {e}");
        Vec::new()
    })
}
