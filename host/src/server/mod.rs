//! The HTTP server: routes, middleware and the serve loop.

mod auth;
mod error;
mod models;
mod proxy;
mod record;
mod request;
mod request_log;
mod stream;
mod usage;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, Uri};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use tokio::net::TcpListener;

pub use error::ApiError;
pub use request::UserInfo;
pub use request_log::RequestId;

use crate::state::AppState;

/// The gateway's routes, ready to serve or to drive with `oneshot` in tests.
pub fn app(state: Arc<AppState>) -> Router {
    let max_body = state.max_body_bytes;
    Router::new()
        .route("/v1/chat/completions", post(proxy::chat_completions))
        .route("/v1/embeddings", post(proxy::embeddings))
        .route("/v1/images/generations", post(proxy::image_generations))
        .route("/v1/models", get(models::list))
        .route("/v1/models/{*id}", get(models::retrieve))
        .route("/usage/total", post(usage::total))
        .route("/usage/models", post(usage::models))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .fallback(unknown_route)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn(request_log::request_log))
        .with_state(state)
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets requests in flight finish.
pub async fn run(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Nagle's algorithm meeting delayed ACKs stalls small SSE writes by ~40 ms.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let background = state.background.clone();
    let ledger = state.ledger.clone();
    let telemetry = std::sync::Arc::clone(&state.telemetry);
    axum::serve(listener, app(state))
        .with_graceful_shutdown(shutdown)
        .await?;
    // Requests are done; let their follow-up work (settling limits) finish too, then write
    // every usage record still queued.
    background.close();
    background.wait().await;
    ledger.shutdown().await;
    // The spans of the last requests, sent while the collector may still be waiting for them.
    telemetry.shutdown(std::time::Duration::from_secs(5)).await;
    Ok(())
}

/// Prometheus' scrape endpoint.
async fn metrics(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
) -> impl axum::response::IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            crate::telemetry::scrape::CONTENT_TYPE,
        )],
        crate::telemetry::scrape::render(&state),
    )
}

async fn health() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({ "status": "ok" }))
}

async fn unknown_route(method: Method, uri: Uri) -> ApiError {
    ApiError::UnknownRoute {
        method: method.to_string(),
        path: uri.path().to_owned(),
    }
}
