//! `/mcp`: a Streamable HTTP MCP server with one tool, `echo`, for the benchmark's tool-call row.
//! Every answer is one JSON response, at once; `GET` (the server's own event stream) is refused
//! with 405, which the transport allows and clients take as "no stream". It is stateless: the
//! session id it hands out is accepted back and never checked.

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

use super::{Body, MAX_BODY, full};

const SESSION: &str = "bench-session";

pub async fn serve(request: Request<Incoming>) -> Response<Body> {
    if request.method() != Method::POST {
        return full(StatusCode::METHOD_NOT_ALLOWED, "text/plain", Bytes::new());
    }
    let body = match http_body_util::Limited::new(request.into_body(), MAX_BODY)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => return full(StatusCode::PAYLOAD_TOO_LARGE, "text/plain", Bytes::new()),
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return full(StatusCode::BAD_REQUEST, "text/plain", Bytes::new());
    };
    let Some(id) = message.get("id").cloned() else {
        // A notification (`notifications/initialized`, a cancellation): taken.
        return full(StatusCode::ACCEPTED, "text/plain", Bytes::new());
    };
    let params = &message["params"];
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": params["protocolVersion"].as_str().unwrap_or("2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "gatebench-mock", "version": "1"},
        }),
        "ping" => json!({}),
        "tools/list" => json!({"tools": [{
            "name": "echo",
            "description": "Gives its text back.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }]}),
        "tools/call" if params["name"] == "echo" => json!({
            "content": [{"type": "text", "text": params["arguments"]["text"].as_str().unwrap_or("")}],
            "isError": false,
        }),
        "prompts/list" => json!({"prompts": []}),
        "resources/list" => json!({"resources": []}),
        method => {
            let error = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("no method {method}")}});
            return full(
                StatusCode::OK,
                "application/json",
                Bytes::from(error.to_string()),
            );
        }
    };
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
    let mut response = full(
        StatusCode::OK,
        "application/json",
        Bytes::from(answer.to_string()),
    );
    response.headers_mut().insert(
        "mcp-session-id",
        hyper::header::HeaderValue::from_static(SESSION),
    );
    response
}
