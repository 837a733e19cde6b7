//! What the guard tests share: one chat request as a client sends it, and the guards' verdicts
//! as the ledger kept them, and an operator's verdict webhook.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::gateway::{Gateway, GatewayBuilder, Guard, Provider};
use super::mock_providers::{KEY, MockProvider};
use super::{TestGateway, http};

/// A chat request with `x-request-id: id`; the status and the body (SSE text for a stream).
pub async fn chat(
    gateway: &TestGateway,
    id: &str,
    model: &str,
    text: &str,
    stream: bool,
) -> (u16, String) {
    let response = http()
        .post(gateway.url("/v1/chat/completions"))
        .header("x-request-id", id)
        .json(&json!({"model": model, "stream": stream,
                      "messages": [{"role": "user", "content": text}]}))
        .send()
        .await
        .unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// The guards' verdicts a usage record kept (its `guards` column, JSON).
pub fn verdicts(record: &wasmgate::ledger::UsageRecord) -> Value {
    serde_json::from_str(record.guards.as_deref().expect("guards recorded")).unwrap()
}

/// An operator's webhook in the `moderation` guard's `webhook` shape (`{"flagged": bool}`):
/// flags any input that mentions a falcon; its URL, and what it was sent.
pub async fn falcon_webhook() -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let kept = Arc::clone(&seen);
    let app = axum::Router::new().route(
        "/verdict",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let kept = Arc::clone(&kept);
            async move {
                let flagged = body["input"].to_string().to_lowercase().contains("falcon");
                kept.lock().unwrap().push(body);
                axum::Json(json!({"flagged": flagged}))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    (format!("http://{addr}/verdict"), seen)
}

/// A gateway with one `anthropic` entry on `mock` and `guard`.
pub fn anthropic_guarded(mock: &MockProvider, guard: Guard) -> GatewayBuilder {
    let entry = Provider::at("anthropic", &mock.base_url(), KEY).models(["claude-sonnet-4-5"]);
    Gateway::builder().provider("anthropic", entry).guard(guard)
}
