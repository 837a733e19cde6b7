//! What the guard tests share: one chat request as a client sends it, and the guards' verdicts
//! as the ledger kept them.

use serde_json::{Value, json};

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
