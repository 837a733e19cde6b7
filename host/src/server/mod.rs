//! The HTTP server: routes, middleware and the serve loop.

mod admin;
mod admin_auth;
mod audit_log;
mod batches;
mod connections;
mod console;
mod console_sign_in;
mod dialect_routes;
mod health;
mod mcp;
mod models;
mod passthrough;
mod proxy;
mod realtime;
mod request_log;
mod responses;
mod responses_ws;
pub(crate) mod routes;
mod store_call;
mod timeouts;
mod unrouted;
mod usage;
mod usage_requests;
mod usage_stats;

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use tokio::net::TcpListener;

pub use crate::error::ApiError;
pub use crate::error::BodyReadTimeout;
pub use crate::pipeline::request::end_user::UserInfo;
pub use request_log::RequestId;
pub use routes::{Listed, Outbound};
use routes::{Table, methods};
pub use timeouts::ConnectionTimeouts;

use crate::state::AppState;

/// The gateway's routes, ready to serve or to drive with `oneshot` in tests. Every handler but
/// `/health`, `/metrics` (probes and scrapes, which say nothing of any project) and the console's
/// static files under `/ui/` (the page asks `/usage/*` with its user's key) passes
/// [`crate::pipeline::caller::caller`] before anything else; `tests/auth_matrix.rs` holds each route to it.
/// `/admin/*` takes admin keys instead (see [`admin`]); `tests/keys.rs` holds it to them.
pub fn app(state: Arc<AppState>) -> Router {
    let max_body = state.max_body_bytes;
    let (router, _) = table().into_parts();
    router
        // After the routes: it applies to those registered before it. axum adds `Allow`.
        // A dialect's path may lie under a fixed route of other methods (Google's
        // `POST /v1/models/{model}:generateContent` under `GET /v1/models/{*id}`).
        .method_not_allowed_fallback(dialect_routes::serve_or_refuse)
        // The registry's dialects declare their own paths (a model inside a segment, as in
        // `/models/{model}:generateContent`, which axum cannot route): matched there, after
        // the pass-through routes (whose prefix a reload may change).
        .fallback(dialect_routes::serve)
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn(request_log::request_log))
        .with_state(state)
}

/// Every method and path of [`app`]'s fixed routes and pass-through routes, with what each
/// sends upstream. The routes the config's dialects declare are the registry's
/// ([`crate::plugins::DialectRegistry::iter`]).
pub fn routes() -> Vec<Listed> {
    table().into_parts().1
}

/// The fixed routes, and the pass-through routes its fallback serves.
fn table() -> Table {
    use Outbound::{Nothing, Text};
    const STORED: Outbound = Nothing("answered from the gateway's own store");
    const BY_ID: Outbound = Nothing("names an upstream object by its id; no text of the client's");
    let table = Table::default()
        .route("/v1/chat/completions", methods().post(Text, proxy::chat_completions))
        .route("/v1/embeddings", methods().post(Text, proxy::embeddings))
        .route("/v1/images/generations", methods().post(Text, proxy::image_generations))
        .route("/v1/completions", methods().post(Text, proxy::completions))
        .route("/v1/moderations", methods().post(Text, proxy::moderations))
        .route("/v1/rerank", methods().post(Text, proxy::rerank))
        .route("/v1/audio/transcriptions", methods().post(Text, proxy::audio_transcriptions))
        .route("/v1/audio/translations", methods().post(Text, proxy::audio_translations))
        .route("/v1/audio/speech", methods().post(Text, proxy::audio_speech))
        // The Responses API's WebSocket mode: each `response.create` on the socket is a turn
        // through the pipeline. Its `POST` is the registry dialect's (the method-not-allowed
        // fallback hands it there).
        .route("/v1/responses", methods().get(Text, responses_ws::upgrade))
        // The Realtime API: the session relayed to the upstream's realtime socket, the client's
        // text guarded and each response metered.
        .route("/v1/realtime", methods().get(Text, realtime::upgrade))
        .route(
            "/v1/responses/{id}",
            methods().get(STORED, responses::retrieve).delete(STORED, responses::delete),
        )
        .route("/v1/responses/{id}/input_items", methods().get(STORED, responses::input_items))
        // Uploads are spooled to disk under `batches.max_file_bytes`, not the body limit.
        .route(
            "/v1/files",
            methods()
                .post(Text, batches::upload_file)
                .get(STORED, batches::list_files)
                .map(|router| router.layer(DefaultBodyLimit::disable())),
        )
        .route(
            "/v1/files/{id}",
            methods().get(STORED, batches::retrieve_file).delete(BY_ID, batches::delete_file),
        )
        .route("/v1/files/{id}/content", methods().get(BY_ID, batches::file_content))
        .route(
            "/v1/batches",
            methods().post(Text, batches::create_batch).get(STORED, batches::list_batches),
        )
        .route("/v1/batches/{id}", methods().get(STORED, batches::retrieve_batch))
        .route("/v1/batches/{id}/cancel", methods().post(BY_ID, batches::cancel_batch))
        .route(
            "/v1/models",
            methods().get(Nothing("the config's models; a pass-through provider's list is asked for with the provider's key alone"), models::list),
        )
        .route("/v1/models/{*id}", methods().get(Nothing("one of the config's models"), models::retrieve));
    let usage = Nothing("the ledger's usage, read");
    let table = table
        .route("/usage/total", methods().post(usage, usage::total))
        .route("/usage/models", methods().post(usage, usage::models))
        .route(
            "/usage/requests",
            methods().post(usage, usage_requests::list),
        )
        .route(
            "/usage/requests/{*request_id}",
            methods().get(usage, usage_requests::one),
        )
        .route("/usage/stats", methods().post(usage, usage_stats::stats));
    let table = mcp::routes(audit_log::routes(admin::routes(console_sign_in::routes(
        console::routes(table),
    ))));
    table
        .route("/health", methods().get(Nothing("a probe"), health::health))
        .route(
            "/metrics",
            methods().get(Nothing("the scrape of the gateway's metrics"), metrics),
        )
        .served_by_fallback(Listed {
            method: "*",
            path: "<passthrough.prefix>/{entry}/{*path}",
            outbound: Text,
        })
}

/// Serves `app` on `listener` until `shutdown` resolves. Then it stops accepting, lets requests
/// in flight (streams included) finish for up to `server.shutdown_timeout_ms`, cuts what is left,
/// waits for the follow-up work and writes every queued usage record.
pub async fn run(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    run_until(listener, state, shutdown, std::future::pending()).await
}

/// [`run`], where `cut_now` resolving during the drain cuts what is left without waiting for the
/// deadline (a second Ctrl-C).
pub async fn run_until(
    listener: TcpListener,
    state: Arc<AppState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
    cut_now: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let connections = connections::Connections::default();
    // Batches in progress are followed while the server runs (see `batches::poll`).
    let poller = crate::batches::poll::spawn(&state);
    // Alerts are looked for while the server runs (see `alerts`).
    let alerts = crate::alerts::spawn(&state);
    // The cap is sized once (a reload keeps it); the deadlines are read for each connection.
    let max_connections = state.gateway.load().config.server.max_connections as usize;
    let reloaded = Arc::clone(&state);
    let timeouts = move || ConnectionTimeouts::of(&reloaded.gateway.load().config.server);
    connections
        .accept(
            listener,
            app(Arc::clone(&state)),
            max_connections,
            timeouts,
            shutdown,
        )
        .await;
    // MCP clients' notification streams never end by themselves.
    state.mcp.end_streams();
    // Read now rather than at start-up, so that a reload can change it.
    let deadline = state.gateway.load().config.server.shutdown_timeout();
    let in_flight = connections.in_flight();
    if in_flight > 0 {
        tracing::info!(
            "draining {in_flight} connections, for up to {} ms",
            deadline.as_millis()
        );
    }
    // Upgraded sockets left the connections' tracking: each closes after its turn in flight,
    // within the same deadline.
    let (drained, sockets_cut) = tokio::join!(
        connections.drain(deadline, cut_now),
        state.sockets.drain(deadline)
    );
    if sockets_cut > 0 {
        tracing::warn!("cut {sockets_cut} WebSocket sessions still in a turn");
    }
    match drained {
        connections::Drained::All => {}
        connections::Drained::Cut { cut, early: false } => tracing::warn!(
            "shutdown deadline of {} ms passed: cut {cut} connections still in flight",
            deadline.as_millis()
        ),
        connections::Drained::Cut { cut, early: true } => {
            tracing::warn!("cut {cut} connections still in flight")
        }
    }
    // A batch being metered is left to the next start (or another replica): its lease runs out.
    poller.abort();
    alerts.abort();
    // Requests are over, and a cut stream has queued its record as it was dropped; let their
    // follow-up work (settling limits) finish too, then write every usage record still queued.
    state.background.close();
    if tokio::time::timeout(BACKGROUND_GRACE, state.background.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            "background work still running after {} s: not waiting for it",
            BACKGROUND_GRACE.as_secs()
        );
    }
    // Stdio MCP servers are stopped with the gateway.
    state.mcp.shutdown().await;
    state.ledger.shutdown().await;
    // The spans of the last requests, sent while the collector may still be waiting for them.
    state
        .telemetry
        .shutdown(std::time::Duration::from_secs(5))
        .await;
    Ok(())
}

/// How long settling limits may take after the drain (a slow Redis must not hold the exit).
const BACKGROUND_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Prometheus' scrape endpoint.
async fn metrics(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
) -> impl axum::response::IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            crate::telemetry::scrape::CONTENT_TYPE,
        )],
        crate::telemetry::scrape::render(&crate::telemetry::scrape::Sources {
            telemetry: &state.telemetry,
            stats: &state.stats,
            plugins: &state.plugins,
            ledger: &state.ledger,
            cache: &state.cache,
            sockets: &state.sockets,
        }),
    )
}
