//! `GET /health`: whether this replica can take a new request now, for a load balancer's health
//! check or a Kubernetes readiness probe.
//!
//! 200 `{"status":"ok", ...}` while a new request would find a plugin instance at once; 503
//! `{"status":"saturated", ...}` while every instance is taken, or every instance of the share
//! open streams may hold (a new stream would wait, and past `plugins.instance_wait_ms` get 503).
//! Both carry the counts under `plugin_instances`. Use it for readiness, not liveness: a
//! saturated replica is busy, not broken, and restarting it would cut its streams.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::state::AppState;

pub async fn health(State(state): State<Arc<AppState>>) -> Response {
    let usage = state.plugins.usage();
    let (status, word) = if usage.saturated() {
        (StatusCode::SERVICE_UNAVAILABLE, "saturated")
    } else {
        (StatusCode::OK, "ok")
    };
    let body = json!({
        "status": word,
        "plugin_instances": {
            "in_use": usage.in_use,
            "max": usage.max,
            "streams": usage.streams,
            "max_streams": usage.max_streams,
            "waiting": usage.waiting,
        },
        "websocket_sessions": state.sockets.open_count(),
    });
    (status, Json(body)).into_response()
}
