//! Google's own API passed through: a request of the `gemini` client dialect (Google's GenAI
//! SDKs) goes upstream as the client wrote it, with only the model (in the URL, and in a batch's
//! `requests[].model`) and the key swapped; the answer comes back untouched, its usage read.

use serde::Deserialize;
use serde_json::Value;
use wasmgate_plugin_sdk::http::json_body;
use wasmgate_plugin_sdk::{Completion, NativeCall, PluginError, Usage};

use crate::response::UsageMetadata;

/// The dialect's declared name, as the `gemini-genai` dialect plugin declares it.
pub const DIALECT: &str = "gemini";

/// The method part of the upstream URL (after `models/<name>:`), and the body to send.
pub fn prepare(
    call: &NativeCall,
    model_path: &str,
    body: &str,
) -> Result<(&'static str, Vec<u8>), PluginError> {
    let method = match call.route.as_str() {
        "generateContent" => "generateContent",
        // Always SSE upstream: the host frames the events as the client asked (SSE or array).
        "streamGenerateContent" => "streamGenerateContent?alt=sse",
        "embedContent" => "embedContent",
        // Google's own count; a whole `generateContentRequest` names its model too.
        "countTokens" => {
            return Ok(("countTokens", with_inner_model(body, model_path)?));
        }
        "batchEmbedContents" => {
            return Ok(("batchEmbedContents", batch(body, model_path)?));
        }
        _ => {
            return Err(PluginError::invalid_request(
                "the Gemini provider does not serve this call natively",
            ));
        }
    };
    Ok((method, body.as_bytes().to_vec()))
}

/// A batch names its model in each request, which must be the URL's: set to the upstream's.
fn batch(body: &str, model_path: &str) -> Result<Vec<u8>, PluginError> {
    let mut value: Value = serde_json::from_str(body)
        .map_err(|_| PluginError::invalid_request("the body is not JSON"))?;
    if let Some(requests) = value.get_mut("requests").and_then(Value::as_array_mut) {
        for request in requests.iter_mut().filter_map(Value::as_object_mut) {
            request.insert("model".to_owned(), Value::from(model_path));
        }
    }
    json_body(&value)
}

/// A `countTokens` body whose `generateContentRequest` names the upstream's model.
fn with_inner_model(body: &str, model_path: &str) -> Result<Vec<u8>, PluginError> {
    let mut value: Value = serde_json::from_str(body)
        .map_err(|_| PluginError::invalid_request("the body is not JSON"))?;
    if let Some(inner) = value
        .get_mut("generateContentRequest")
        .and_then(Value::as_object_mut)
    {
        inner.insert("model".to_owned(), Value::from(model_path));
    }
    json_body(&value)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WithUsage {
    usage_metadata: Option<UsageMetadata>,
}

/// The usage a native answer or stream event reports (`usageMetadata`), if any.
pub fn usage(json: &str) -> Option<Usage> {
    serde_json::from_str::<WithUsage>(json)
        .ok()?
        .usage_metadata
        .map(UsageMetadata::to_usage)
}

/// A whole native answer, passed on as it is.
pub fn parse(body: Vec<u8>) -> Result<Completion, PluginError> {
    let body = String::from_utf8(body)
        .map_err(|_| PluginError::upstream("Gemini answered with a body that is not UTF-8"))?;
    Ok(Completion {
        usage: usage(&body),
        body,
    })
}
