//! The `gemini` dialect: Google's GenAI API (`/v1beta/models/{model}:generateContent` and its
//! siblings, as the `google-genai` SDKs, ADK and the Gemini CLI speak it) decoded into canonical
//! chat completions and embeddings, and the answers encoded back, for targets that do not speak
//! it themselves (a Gemini client on an OpenAI or Anthropic model). A `gemini` provider entry
//! speaks it natively, and gets the client's own body.
//!
//! Wire formats are taken from Google's API reference:
//! - generateContent / streamGenerateContent: <https://ai.google.dev/api/generate-content>
//! - Contents and parts: <https://ai.google.dev/api/caching#Content>
//! - Function calling: <https://ai.google.dev/gemini-api/docs/function-calling>
//! - countTokens: <https://ai.google.dev/api/tokens>
//! - Embeddings: <https://ai.google.dev/api/embeddings>
//! - Models: <https://ai.google.dev/api/models>
//! - Errors: <https://ai.google.dev/gemini-api/docs/troubleshooting>
//!
//! What the canonical form cannot carry is dropped and listed (`safetySettings`,
//! `thinkingConfig`, `topK`, `cachedContent`, non-function tools, ...). `thinkingConfig` is
//! dropped rather than mapped to `reasoning_effort`, as the Messages dialect drops `thinking`:
//! an OpenAI model that does not reason refuses `reasoning_effort`.
//!
//! Modules: [`decode`] (the request's fields), [`contents`] (the conversation), [`schema`]
//! (Google's OpenAPI schemas as JSON Schema), [`encode`] (complete answers), [`stream`]
//! (streamed answers), [`embed`] (embeddings), [`models`] (the model list), [`errors`].

mod contents;
mod decode;
mod embed;
mod encode;
mod errors;
mod models;
mod schema;
mod stream;

use wasmgate_plugin_sdk::{
    AnswerInfo, Call, Declaration, Decoded, Dialect, Failure, KeySource, Route, RouteKind, Usage,
};

struct Gemini;

/// Where the calls are: Google's SDKs use `v1` or `v1beta` by version (google-genai 3 sends
/// `v1`), and the REST reference `v1beta`.
const PREFIXES: [&str; 2] = ["/v1beta/models", "/v1/models"];

/// The methods called on a model, and what the host does with each.
const CALLS: [(&str, RouteKind); 5] = [
    ("generateContent", RouteKind::Call),
    ("streamGenerateContent", RouteKind::Call),
    ("countTokens", RouteKind::CountTokens),
    ("embedContent", RouteKind::Call),
    ("batchEmbedContents", RouteKind::Call),
];

impl Dialect for Gemini {
    type Encoder = stream::Encoder;

    fn describe() -> Declaration {
        let mut routes = Vec::new();
        for prefix in PREFIXES {
            for (name, kind) in CALLS {
                let path = format!("{prefix}/{{model}}:{name}");
                routes.push(Route::new("POST", &path, name, kind));
            }
        }
        // Only under `v1beta`: `GET /v1/models` is OpenAI's list, which the gateway serves.
        routes.push(Route::new(
            "GET",
            PREFIXES[0],
            "listModels",
            RouteKind::ListModels,
        ));
        let one = format!("{}/{{model}}", PREFIXES[0]);
        routes.push(Route::new("GET", &one, "getModel", RouteKind::GetModel));
        Declaration {
            name: "gemini".to_owned(),
            routes,
            // Google's SDKs send `x-goog-api-key`; REST examples put the key in `?key=`.
            keys: vec![
                KeySource::Header("x-goog-api-key".to_owned()),
                KeySource::Query("key".to_owned()),
            ],
            typed_events: false,
            // Google's `responseId` has no prefix: the gateway's own ids keep the one they had.
            answer_id_prefix: "resp_".to_owned(),
            chains_turns: false,
            native_answers_guarded: true,
        }
    }

    fn decode(call: &Call) -> Result<Decoded, Failure> {
        let model = model_of(call)?;
        match call.route.as_str() {
            "generateContent" => decode::generate(&call.body, model, false, call),
            "streamGenerateContent" => decode::generate(&call.body, model, true, call),
            "countTokens" => decode::count(&call.body, model),
            "embedContent" => embed::decode_one(&call.body, model),
            "batchEmbedContents" => embed::decode_batch(&call.body, model),
            other => Err(Failure::new(
                wasmgate_plugin_sdk::ErrorKind::NotFound,
                format!("The method `{other}` is not served."),
            )),
        }
    }

    fn encode(
        info: &AnswerInfo,
        completion: &str,
        usage: Option<Usage>,
    ) -> Result<String, Failure> {
        match info.route.as_str() {
            "embedContent" | "batchEmbedContents" => embed::encode(&info.route, completion),
            _ => encode::encode(info, completion, usage),
        }
    }

    fn encode_error(status: u16, error: &Failure) -> String {
        errors::body(status, &error.message)
    }

    fn encode_count(_info: &AnswerInfo, tokens: u32) -> String {
        serde_json::json!({ "totalTokens": tokens }).to_string()
    }

    fn encode_models(route: &str, models: &str) -> Result<String, Failure> {
        models::encode(route, models)
    }
}

/// The model the path names: the gateway's model id, without the `models/` a client may repeat.
fn model_of(call: &Call) -> Result<&str, Failure> {
    let model = call.param("model").unwrap_or_default();
    let model = model.strip_prefix("models/").unwrap_or(model);
    if model.is_empty() {
        return Err(Failure::invalid_request("The URL names no model.").with_param("model"));
    }
    Ok(model)
}

wasmgate_plugin_sdk::export_dialect!(Gemini);

#[cfg(test)]
mod tests;
