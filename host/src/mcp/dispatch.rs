//! One JSON-RPC request of a session, by its method: listings from the merged view, a tool call,
//! a prompt or a resource from the server its name or URI leads to.

use serde_json::{Value, json};

use super::call::Call;
use super::catalog::{self, Kind};
use super::error::{McpError, from_service};

/// The result of `method` with `params`, for the caller `call` describes.
pub async fn dispatch(
    call: &Call<'_>,
    method: &str,
    params: Option<Value>,
) -> Result<Value, McpError> {
    let kind = match method {
        "ping" => return Ok(json!({})),
        "tools/call" => return call.run(params).await,
        "prompts/get" => return prompt(call, params).await,
        "resources/read" => return read(call, params).await,
        "tools/list" => Kind::Tools,
        "prompts/list" => Kind::Prompts,
        "resources/list" => Kind::Resources,
        "resources/templates/list" => Kind::Templates,
        other => return Err(McpError::MethodNotFound(other.to_owned())),
    };
    let cursor = params
        .as_ref()
        .and_then(|p| p.get("cursor"))
        .and_then(Value::as_str);
    catalog::list(call.hub, kind, call.permit, cursor).await
}

/// `params` as an object with a string at `field`; the object and the string.
fn named(
    params: Option<Value>,
    field: &str,
) -> Result<(serde_json::Map<String, Value>, String), McpError> {
    let Some(Value::Object(params)) = params else {
        return Err(McpError::InvalidParams(
            "`params` must be an object".to_owned(),
        ));
    };
    match params.get(field) {
        Some(Value::String(name)) => {
            let name = name.clone();
            Ok((params, name))
        }
        _ => Err(McpError::InvalidParams(format!(
            "`params.{field}` must be a string"
        ))),
    }
}

async fn prompt(call: &Call<'_>, params: Option<Value>) -> Result<Value, McpError> {
    let (mut params, name) = named(params, "name")?;
    let (server, own) = match call.hub.route(&name) {
        Some((server, own)) if call.permit.allows(&server.name, own) => (server, own),
        _ => return Err(McpError::UnknownPrompt(name)),
    };
    params.insert("name".to_owned(), own.into());
    let request = serde_json::from_value(Value::Object(params))
        .map_err(|e| McpError::InvalidParams(e.to_string()))?;
    let peer = server
        .peer()
        .ok_or_else(|| McpError::Unavailable(server.name.to_string()))?;
    let got = tokio::time::timeout(server.timeout, peer.get_prompt(request))
        .await
        .map_err(|_| McpError::Timeout(server.name.to_string()))?
        .map_err(|e| from_service(&server.name, e))?;
    serde_json::to_value(got).map_err(|e| McpError::InvalidParams(e.to_string()))
}

async fn read(call: &Call<'_>, params: Option<Value>) -> Result<Value, McpError> {
    let (mut params, uri) = named(params, "uri")?;
    let (server, own) = match call.hub.route_uri(&uri) {
        Some((server, own)) if call.permit.allows_resources(&server.name) => (server, own),
        _ => return Err(McpError::UnknownResource(uri)),
    };
    params.insert("uri".to_owned(), own.into());
    let request = serde_json::from_value(Value::Object(params))
        .map_err(|e| McpError::InvalidParams(e.to_string()))?;
    let peer = server
        .peer()
        .ok_or_else(|| McpError::Unavailable(server.name.to_string()))?;
    let got = tokio::time::timeout(server.timeout, peer.read_resource(request))
        .await
        .map_err(|_| McpError::Timeout(server.name.to_string()))?
        .map_err(|e| from_service(&server.name, e))?;
    let mut got = serde_json::to_value(got).map_err(|e| McpError::InvalidParams(e.to_string()))?;
    // The contents name their URIs as the server knows them: give them the merged form back.
    if let Some(contents) = got["contents"].as_array_mut() {
        for content in contents {
            if let Some(own) = content["uri"].as_str() {
                content["uri"] = format!("{}+{own}", server.name).into();
            }
        }
    }
    if let Some(object) = got.as_object_mut() {
        object.remove("resultType");
    }
    Ok(got)
}
